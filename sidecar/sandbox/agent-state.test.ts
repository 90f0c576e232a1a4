/**
 * An agent's own state inside the sandbox (sidecar/sandbox/enclosure.ts): Claude Code keeps its sessions
 * in ~/.claude (writable inside, so a session can be loaded again) while its settings that run commands
 * stay read-only, whether it was started by its built-in name (`claude`) or its registry id
 * (`claude-acp`, how the ACP registry installs it).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Enclosure } from "./enclosure";

const root = mkdtempSync(join(tmpdir(), "sandbox-agent-state-"));
const home = join(root, "home");
const work = join(root, "work");
mkdirSync(join(home, ".claude"), { recursive: true });
writeFileSync(join(home, ".claude", "settings.json"), "{}");
writeFileSync(join(home, ".claude.json"), "{}");
mkdirSync(work, { recursive: true });

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The bubblewrap arguments an agent started as `agent` gets under `workspace`. */
async function argsOf(agent: string): Promise<string[]> {
  const enclosure = new Enclosure(
    { profile: "workspace", network: { mode: "none", allow: [] }, denyRead: [] },
    {
      tools: { platform: "linux-bwrap", enclose: "/usr/bin/bwrap", socat: null, missing: null },
      home,
      dataDir: join(root, "data"),
      configDir: join(home, ".config", "agent-runtime"),
      isRoot: false,
    },
    () => {},
  );
  enclosure.addFolder(work);
  try {
    return (await enclosure.wrap(agent, { command: "/bin/true", args: [], cwd: work, env: {} })).args;
  } finally {
    await enclosure.dispose();
  }
}

/** Is `[flag, path, path]` among the arguments? */
function mounts(args: string[], flag: string, path: string): boolean {
  return args.some((a, i) => a === flag && args[i + 1] === path && args[i + 2] === path);
}

describe("Claude Code's own state under workspace", () => {
  it.each(["claude", "claude-acp"])("started as %s: ~/.claude and ~/.claude.json writable, its settings read-only", async (agent) => {
    const args = await argsOf(agent);
    expect(mounts(args, "--bind-try", join(home, ".claude"))).toBe(true);
    expect(mounts(args, "--bind-try", join(home, ".claude.json"))).toBe(true);
    expect(mounts(args, "--ro-bind-try", join(home, ".claude", "settings.json"))).toBe(true);
    // The settings are mounted after (over) the writable folder.
    expect(args.lastIndexOf(join(home, ".claude", "settings.json"))).toBeGreaterThan(args.lastIndexOf(join(home, ".claude")));
  });

  it("another agent gets none of it", async () => {
    const args = await argsOf("gemini");
    expect(args).not.toContain(join(home, ".claude"));
    expect(args).not.toContain(join(home, ".claude.json"));
  });
});
