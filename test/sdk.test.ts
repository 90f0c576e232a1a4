/**
 * The official `sandbox-agent` SDK 0.4.2, unchanged, against the runtime: named machine and default route.
 * Every call it makes is served (health, agents, sessions over ACP, processes, terminals, files, MCP and
 * skills entries), but its desktop calls, which answer 501 (a developer's machine has its own desktop).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { SandboxAgent, SandboxAgentError } from "sandbox-agent";
import WebSocket from "ws";
import { tarArchive } from "./tar-archive";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime;

beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"] });
});
afterAll(async () => {
  await rt?.dispose();
});

describe.each([
  ["the default machine", ""],
  ["a named machine", "/machines/local"],
])("the sandbox-agent SDK on %s", (_name, prefix) => {
  const connect = () => SandboxAgent.connect({ baseUrl: `${rt.url}${prefix}`, token: rt.token });

  it("reads health and agents", async () => {
    const sdk = await connect();
    expect(await sdk.getHealth()).toMatchObject({ status: "ok" });
    const { agents } = await sdk.listAgents();
    expect(agents.map((a) => a.id)).toContain("mock");
    expect(await sdk.getAgent("mock")).toMatchObject({ id: "mock", installed: true });
    expect((await sdk.listAcpServers()).servers).toBeInstanceOf(Array);
  });

  it("drives a session of the mock agent through the ACP relay", async () => {
    const sdk = await connect();
    const session = await sdk.createSession({ agent: "mock", sessionInit: { cwd: rt.dir, mcpServers: [] } });
    const said: string[] = [];
    session.onEvent((event) => {
      const update = (event.payload as { params?: { update?: { sessionUpdate?: string; content?: { text?: string } } } }).params?.update;
      if (update?.sessionUpdate === "agent_message_chunk" && update.content?.text) said.push(update.content.text);
    });
    const result = await session.prompt([{ type: "text", text: "hello" }]);
    expect(result.stopReason).toBe("end_turn");
    await waitFor(async () => said.join("") === "You said: hello", "the streamed answer");
    await sdk.destroySession(session.id);
    await sdk.dispose();
  });

  it("lists, writes, reads, moves, unpacks and deletes files", async () => {
    const sdk = await connect();
    const dir = join(rt.dir, `sdk-files${prefix.replace(/\W/g, "-")}`);
    expect(await sdk.mkdirFs({ path: dir })).toEqual({ path: dir });
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) % 256);
    expect(await sdk.writeFsFile({ path: join(dir, "a.bin") }, bytes)).toEqual({ path: join(dir, "a.bin"), bytesWritten: bytes.length });
    expect(Buffer.from(await sdk.readFsFile({ path: join(dir, "a.bin") })).equals(Buffer.from(bytes))).toBe(true);
    expect(await sdk.statFs({ path: join(dir, "a.bin") })).toMatchObject({ entryType: "file", size: bytes.length });
    expect(await sdk.moveFs({ from: join(dir, "a.bin"), to: join(dir, "b.bin") })).toEqual({ from: join(dir, "a.bin"), to: join(dir, "b.bin") });
    const batch = await sdk.uploadFsBatch(tarArchive([{ name: "t/x.txt", body: "x" }]), { path: dir });
    expect(batch).toEqual({ paths: [join(dir, "t", "x.txt")], truncated: false });
    expect((await sdk.listFsEntries({ path: dir })).map((e) => `${e.name}:${e.entryType}`)).toEqual(["b.bin:file", "t:directory"]);
    expect(await sdk.deleteFsEntry({ path: join(dir, "t"), recursive: true })).toEqual({ path: join(dir, "t") });
    await expect(sdk.statFs({ path: join(dir, "t") })).rejects.toMatchObject({ status: 404 });
  });

  it("opens a terminal: ready, output, input, resize, close", async () => {
    const sdk = await connect();
    const shell = await sdk.createProcess({ command: "sh", tty: true, interactive: true });
    const terminal = sdk.connectProcessTerminal(shell.id, { WebSocket: WebSocket as unknown as typeof globalThis.WebSocket });
    let output = "";
    let ready = false;
    terminal.onReady(() => {
      ready = true;
    });
    terminal.onData((bytes) => {
      output += Buffer.from(bytes).toString();
    });
    await waitFor(async () => ready, "the ready frame");
    terminal.resize({ cols: 90, rows: 20 });
    terminal.sendInput("stty size; echo sdk-$((6*7))\n");
    await waitFor(async () => output.includes("20 90") && output.includes("sdk-42"), "the shell's answer");
    terminal.close();
    await terminal.closed;
    await sdk.killProcess(shell.id);
  });

  it("sets, reads and deletes a folder's MCP and skills entries", async () => {
    const sdk = await connect();
    const directory = join(rt.dir, `sdk-project${prefix.replace(/\W/g, "-")}`);
    mkdirSync(directory, { recursive: true });
    await sdk.setMcpConfig({ directory, mcpName: "files" }, { type: "local", command: "files-mcp", args: ["--stdio"] });
    expect(await sdk.getMcpConfig({ directory, mcpName: "files" })).toEqual({ type: "local", command: "files-mcp", args: ["--stdio"] });
    await sdk.deleteMcpConfig({ directory, mcpName: "files" });
    await expect(sdk.getMcpConfig({ directory, mcpName: "files" })).rejects.toMatchObject({ status: 404 });
    await sdk.setSkillsConfig({ directory, skillName: "none" }, { sources: [] });
    expect(await sdk.getSkillsConfig({ directory, skillName: "none" })).toEqual({ sources: [] });
    await sdk.deleteSkillsConfig({ directory, skillName: "none" });
    await expect(sdk.getSkillsConfig({ directory, skillName: "none" })).rejects.toBeInstanceOf(SandboxAgentError);
  });

  it("answers its desktop calls with a clear 501", async () => {
    const sdk = await connect();
    await expect(sdk.getDesktopStatus()).rejects.toMatchObject({ status: 501 });
  });

  it("runs, creates, follows, feeds and stops processes, and reads and sets their limits", async () => {
    const sdk = await connect();
    expect(await sdk.runProcess({ command: "sh", args: ["-c", "echo out; echo err >&2; exit 2"] })).toMatchObject({
      exitCode: 2,
      stdout: "out\n",
      stderr: "err\n",
      timedOut: false,
    });

    const config = await sdk.getProcessConfig();
    expect(config.maxConcurrentProcesses).toBeGreaterThan(0);
    expect(await sdk.setProcessConfig(config)).toMatchObject(config);

    const echo = await sdk.createProcess({ command: "sh", args: ["-c", "echo a; sleep 0.2; echo b"] });
    const seen: string[] = [];
    const subscription = await sdk.followProcessLogs(echo.id, (entry) => seen.push(entry.data));
    await waitFor(async () => seen.join("") === "a\nb\n", "the followed output");
    subscription.close();
    const logs = await sdk.getProcessLogs(echo.id, { tail: 1 });
    expect(logs.entries.map((e) => e.data)).toEqual(["b\n"]);
    expect(logs.entries[0]).toMatchObject({ stream: "stdout", encoding: "utf8", sequence: expect.any(Number), timestampMs: expect.any(Number) });

    const cat = await sdk.createProcess({ command: "cat", interactive: true });
    expect(await sdk.sendProcessInput(cat.id, { data: Buffer.from("hi\n").toString("base64"), encoding: "base64" })).toEqual({ bytesWritten: 3 });
    await sdk.stopProcess(cat.id);
    const tty = await sdk.createProcess({ command: "sleep", args: ["5"], tty: true });
    expect(await sdk.resizeProcessTerminal(tty.id, { cols: 100, rows: 30 })).toEqual({ cols: 100, rows: 30 });
    await sdk.killProcess(tty.id);
    const users = await sdk.listProcesses({ owner: "user" });
    expect(users.processes.map((p) => p.id)).toEqual(expect.arrayContaining([echo.id, cat.id]));
    await waitFor(async () => (await sdk.getProcess(cat.id)).status === "exited", "cat to be killed");
    await sdk.deleteProcess(cat.id);
  });
});
