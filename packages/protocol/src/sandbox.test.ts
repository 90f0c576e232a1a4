import { describe, expect, it } from "vitest";
import { NetworkHost, NO_SANDBOX, SandboxSpec, stricterSandbox } from "./sandbox";

const spec = (s: unknown) => SandboxSpec.parse(s);

describe("stricterSandbox", () => {
  it("takes the lower profile and network, and every denied path", () => {
    const floor = spec({ profile: "workspace", network: { mode: "allowlist", allow: ["github.com", "127.0.0.1:1"] }, denyRead: ["~/a"] });
    const team = spec({ profile: "full", network: { mode: "open" }, denyRead: ["/b"] });
    expect(stricterSandbox(team, floor)).toEqual({
      profile: "workspace",
      network: { mode: "allowlist", allow: ["github.com", "127.0.0.1:1"] },
      denyRead: ["/b", "~/a"],
    });
    expect(stricterSandbox(NO_SANDBOX, floor)).toEqual(stricterSandbox(floor, NO_SANDBOX));
  });
  it("meets two allowlists in what both list", () => {
    const a = spec({ profile: "read-only", network: { mode: "allowlist", allow: ["GitHub.com", "x.org"] } });
    const b = spec({ profile: "workspace", network: { mode: "allowlist", allow: ["github.com"] } });
    expect(stricterSandbox(a, b).network).toEqual({ mode: "allowlist", allow: ["GitHub.com"] });
    expect(stricterSandbox(a, spec({ profile: "full", network: { mode: "none" } })).network).toEqual({ mode: "none", allow: [] });
  });
  it("accepts hosts and ports, refuses the rest", () => {
    for (const ok of ["github.com", "*.npmjs.org", "127.0.0.1:18555", "[::1]:8080", "localhost"]) expect(NetworkHost.safeParse(ok).success, ok).toBe(true);
    for (const bad of ["http://x", "a b", "x:0", "x:70000", "*", "-x.com", ""]) expect(NetworkHost.safeParse(bad).success, bad).toBe(false);
  });
});
