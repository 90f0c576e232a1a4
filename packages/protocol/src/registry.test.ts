import { describe, expect, it } from "vitest";
import { isNpmPackageSpec, isPypiRequirement, parseRegistry } from "./registry";

describe("a registry entry's package", () => {
  it("takes what npm and uvx install by name, version or https tarball", () => {
    for (const spec of [
      "@zed-industries/claude-code-acp@0.12.4",
      "opencode-ai",
      "gemini-cli@latest",
      "pi-acp@^1.2.0",
      "https://registry.example/agent-1.0.0.tgz",
      "http://127.0.0.1:4873/agent-1.0.0.tgz",
    ])
      expect(isNpmPackageSpec(spec), spec).toBe(true);
    for (const spec of ["fast-agent-acp==0.3.1", "py-agent", "tool[cli,extra]>=1.0,<2", "ruff@0.6.0"]) expect(isPypiRequirement(spec), spec).toBe(true);
  });

  it("refuses what npm or uvx would read as an option, a path or another source", () => {
    for (const spec of [
      "--prefix=/tmp/evil",
      "-g",
      "good@--prefix=/x",
      "../escape",
      "/abs/path",
      "file:../x",
      "git+https://github.com/a/b.git",
      "github:a/b",
      "Caps",
      "name@1.0 --global",
      "http://evil.example/agent.tgz",
      "ftp://x/y.tgz",
    ])
      expect(isNpmPackageSpec(spec), spec).toBe(false);
    for (const spec of ["--with=evil", "-e", "pkg==1.0 --index-url=http://evil", "./local", "git+https://x/y"])
      expect(isPypiRequirement(spec), spec).toBe(false);
  });

  it("leaves such an entry out of the catalog, and keeps the rest", () => {
    const agent = (id: string, pkg: string) => ({ id, name: id, version: "1.0.0", distribution: { npx: { package: pkg, args: ["--experimental-acp"] } } });
    const parsed = parseRegistry({ version: "1", agents: [agent("good", "good-agent@1.0.0"), agent("evil", "--prefix=/tmp/evil")] });
    expect(parsed.agents.map((a) => a.id)).toEqual(["good"]);
    // The agent's own arguments are its own: they stay as they are.
    expect(parsed.agents[0]?.distribution.npx?.args).toEqual(["--experimental-acp"]);
    expect(parsed.skipped.join(" ")).toContain("evil");
  });
});
