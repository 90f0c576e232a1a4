/**
 * The macOS profile as generated text (docs/architecture.md, "Sandboxes"): no macOS machine here, so
 * what is checked is what `sandbox-exec -p` would be given, from the same rules as bubblewrap's mounts.
 */
import { describe, expect, it } from "vitest";
import type { SandboxSpec } from "@agent-runtime/protocol/sandbox";
import { seatbeltProfile } from "./seatbelt";

const paths = {
  hiddenDirs: ["/Users/pat/.ssh", "/Users/pat/.agent-runtime", "/Users/pat/code/app/.aws"],
  hiddenFiles: ["/Users/pat/.netrc"],
  reveal: ["/Users/pat/.agent-runtime/agents"],
  writable: ["/Users/pat/code/app", '/Users/pat/odd "name"'],
  writableFiles: [],
  readOnlyInside: ["/Users/pat/code/app/.git/hooks", "/Users/pat/code/app/.git/config"],
};
const spec = (profile: SandboxSpec["profile"], mode: SandboxSpec["network"]["mode"]): SandboxSpec => ({ profile, network: { mode, allow: [] }, denyRead: [] });
const at = (text: string, line: string) => text.split("\n").indexOf(line);

describe("the Seatbelt profile", () => {
  it("denies by default, reads but the secrets, writes the folders but hooks and config, most specific last", () => {
    const text = seatbeltProfile(spec("workspace", "allowlist"), paths, { tmp: "/private/tmp/ar-1/tmp", proxyPort: 51234 });
    expect(text.startsWith("(version 1)\n(deny default)\n")).toBe(true);
    expect(text).toContain('(allow file-write* (subpath "/private/tmp/ar-1/tmp"))');
    expect(text).toContain('(deny file-read* file-write* (literal "/Users/pat/.netrc"))');
    expect(text).toContain('(allow file-write* (subpath "/Users/pat/odd \\"name\\""))');
    const app = at(text, '(allow file-write* (subpath "/Users/pat/code/app"))');
    expect(app).toBeGreaterThan(at(text, "(allow file-read*)"));
    expect(at(text, '(deny file-read* file-write* (subpath "/Users/pat/code/app/.aws"))')).toBeGreaterThan(app);
    expect(at(text, '(deny file-write* (subpath "/Users/pat/code/app/.git/hooks"))')).toBeGreaterThan(app);
    expect(at(text, '(deny file-write* (subpath "/Users/pat/code/app/.git/config"))')).toBeGreaterThan(app);
    const data = at(text, '(deny file-read* file-write* (subpath "/Users/pat/.agent-runtime"))');
    expect(at(text, '(allow file-read-metadata (literal "/Users/pat/.agent-runtime"))')).toBe(data + 1);
    expect(at(text, '(allow file-read* (subpath "/Users/pat/.agent-runtime/agents"))')).toBeGreaterThan(data);
    // Only the egress proxy's port on the network, and the agent's own loopback servers.
    expect(text).toContain('(allow network-outbound (remote tcp "localhost:51234"))');
    expect(text).not.toContain("(allow network*)");
  });

  it("writes nothing but temp under read-only, and opens the network only when open", () => {
    const readOnly = seatbeltProfile(spec("read-only", "none"), paths, { tmp: "/private/tmp/ar-2/tmp", proxyPort: null });
    expect(readOnly).not.toContain('(allow file-write* (subpath "/Users/pat/code/app"))');
    expect(readOnly).not.toContain("network-outbound");
    const full = seatbeltProfile(spec("full", "open"), { ...paths, hiddenDirs: [], hiddenFiles: [], readOnlyInside: [] }, { tmp: "/t", proxyPort: null });
    expect(full).toContain("(allow file-write*)\n");
    expect(full).toContain("(allow network*)");
  });
});
