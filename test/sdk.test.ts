/**
 * The official `sandbox-agent` SDK 0.4.2, unchanged, against the runtime: named machine and default route.
 * These are the calls of its process and agent half, which this runtime serves (terminal resize included);
 * its file, terminal-socket and MCP calls are not served yet, and its desktop calls answer 501 (a
 * developer's machine has its own desktop).
 */
import { SandboxAgent } from "sandbox-agent";
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
    await sdk.killProcess(cat.id);
    const tty = await sdk.createProcess({ command: "sleep", args: ["5"], tty: true });
    expect(await sdk.resizeProcessTerminal(tty.id, { cols: 100, rows: 30 })).toEqual({ cols: 100, rows: 30 });
    await sdk.killProcess(tty.id);
    const users = await sdk.listProcesses({ owner: "user" });
    expect(users.processes.map((p) => p.id)).toEqual(expect.arrayContaining([echo.id, cat.id]));
    await waitFor(async () => (await sdk.getProcess(cat.id)).status === "exited", "cat to be killed");
    await sdk.deleteProcess(cat.id);
  });
});
