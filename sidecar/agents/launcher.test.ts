import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ProcessManager } from "../processes/processes";
import { Installer } from "./installer";
import { createLauncher, findFolder } from "./launcher";

/** An installer whose data folder says claude is installed (the two bins exist as files). */
async function installedClaude(): Promise<{ installer: Installer; native: string; adapter: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), "launcher-test-"));
  const native = join(dataDir, "claude");
  const adapter = join(dataDir, "claude-agent-acp");
  await writeFile(native, "");
  await writeFile(adapter, "");
  await mkdir(join(dataDir, "agents", "claude"), { recursive: true });
  const current = {
    native: { package: "@anthropic-ai/claude-code", version: "2.1.330", path: native },
    agentProcess: { package: "@zed-industries/claude-agent-acp", version: "0.23.1", path: adapter },
  };
  await writeFile(join(dataDir, "agents", "claude", "current.json"), JSON.stringify(current));
  return { installer: new Installer(dataDir, {} as ProcessManager), native, adapter };
}

describe("the launcher", () => {
  it("points the adapter at the installed agent binary, so the one reported is the one that runs", async () => {
    const { installer, native, adapter } = await installedClaude();
    const launch = await createLauncher(installer, { workdir: "/work", isRoot: false })("claude");
    expect(launch).toEqual({ command: adapter, args: [], cwd: "/work", env: { CLAUDE_CODE_EXECUTABLE: native } });
  });

  it("refuses to start an agent that refuses root, as root, unless the machine's owner opted in", async () => {
    const { installer, native } = await installedClaude();
    await expect(createLauncher(installer, { workdir: "/w", isRoot: true })("claude")).rejects.toMatchObject({
      code: "conflict",
      message: expect.stringMatching(/--allow-root-agents/),
    });
    const allowed = await createLauncher(installer, { workdir: "/w", isRoot: true, allowRootAgents: true })("claude");
    expect(allowed.env).toEqual({ CLAUDE_CODE_EXECUTABLE: native, IS_SANDBOX: "1" });
  });
});

describe("finding an agent's helpers", () => {
  it("finds the folder its platform package ships, however deep the package nests it", async () => {
    const root = await mkdtemp(join(tmpdir(), "helpers-test-"));
    const helpers = join(root, "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "codex-resources");
    await mkdir(helpers, { recursive: true });
    await writeFile(join(helpers, "bwrap"), "");
    expect(await findFolder(join(root, "node_modules"), "codex-resources")).toBe(helpers);
    expect(await findFolder(join(root, "node_modules"), "nothing-like-it")).toBeNull();
  });
});
