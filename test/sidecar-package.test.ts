/**
 * The sidecar as a user gets it: `npm pack ./sidecar`, installed from the tarball into an empty folder
 * outside the repository by the steps of docs/deploying.md, "Connect a machine", run as written, joins the runtime as
 * a new machine and serves an ACP round trip with the mock agent. Also: what the tarball holds and how
 * big the install is, `status`, the service files, and the version handshake.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../dev/runtime";
import { TUNNEL_PROTOCOL_VERSION } from "@agent-runtime/protocol/frames";
import { mintMachineToken } from "@agent-runtime/protocol/machine-token";
import { LATEST_SIDECAR_VERSION } from "@agent-runtime/protocol/version";
import { example } from "./docs-examples";
import { startRuntime, waitFor, type Runtime } from "./harness";

const run = promisify(execFile);

let rt: Runtime;
let work: string;
let tarball: string;
let machineDir: string;
let home: string;
let connect: ChildProcess | null = null;

/** The environment of a user on the machine: no variable of the repository or of the test run. */
function userEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH!, HOME: home, npm_config_cache: join(work, "npm-cache"), npm_config_update_notifier: "false", ...extra };
}

beforeAll(async () => {
  rt = await startRuntime({ machines: [] });
  work = await mkdtemp(join(tmpdir(), "sidecar-package-"));
  const { stdout } = await run("npm", ["pack", "./sidecar", "--json", "--pack-destination", work], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  const packed = JSON.parse(stdout) as { filename: string; size: number; files: { path: string }[] }[];
  tarball = join(work, packed[0]!.filename);
  machineDir = join(work, "machine");
  home = join(work, "home");
  await mkdir(machineDir, { recursive: true });
  await mkdir(home, { recursive: true });
}, 120_000);

afterAll(async () => {
  if (connect?.pid && connect.exitCode === null && connect.signalCode === null) {
    const exited = new Promise((resolve) => connect!.once("exit", resolve));
    process.kill(-connect.pid, "SIGTERM");
    await exited;
  }
  await rt?.dispose();
  // The sidecar's children may still be closing files in the folder for a moment.
  await rm(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
});

describe("the sidecar package", () => {
  it("ships only what runs: the two bundles, the README and the license", async () => {
    const { stdout } = await run("tar", ["-tzf", tarball]);
    expect(stdout.trim().split("\n").sort()).toEqual([
      "package/LICENSE",
      "package/README.md",
      "package/dist/mock-agent.js",
      "package/dist/sidecar.js",
      "package/package.json",
    ]);
    const manifest = JSON.parse((await run("tar", ["-xzOf", tarball, "package/package.json"])).stdout) as {
      name: string;
      version: string;
      bin: Record<string, string>;
      dependencies: Record<string, string>;
      private?: boolean;
    };
    expect(manifest).toMatchObject({ name: "agent-runtime-sidecar", version: LATEST_SIDECAR_VERSION, bin: { "agent-runtime-sidecar": "dist/sidecar.js" } });
    expect(manifest.private).toBeUndefined();
    expect(Object.keys(manifest.dependencies)).toEqual(["@lydell/node-pty"]);
  });

  it("installs from the tarball into an empty folder and connects by the steps of docs/deploying.md, as a new machine, serving an ACP round trip", async () => {
    const minted = await rt.api("/v1/machine-tokens", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ machine: "laptop" }),
    });
    const { token } = (await minted.json()) as { token: string };
    let output = "";
    connect = spawn("bash", ["-euc", example("docs/deploying.md", "connect")], {
      cwd: machineDir,
      env: userEnv({ URL: rt.url, MACHINE_TOKEN: token, SIDECAR_PACKAGE: tarball }),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // its own process group: npx and the sidecar under it stop together
    });
    connect.stdout!.on("data", (d: Buffer) => (output += d.toString()));
    connect.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    await waitFor(async () => output.includes("connected to"), `the packaged sidecar to connect:\n${output}`, 120_000);
    expect(output).not.toContain(token);

    // Installed with no access to the repository: the bin resolves inside the folder, and it stays small.
    const installed = join(machineDir, "node_modules");
    expect(existsSync(join(installed, ".bin", "agent-runtime-sidecar"))).toBe(true);
    const sizeKb = Number((await run("du", ["-sk", installed])).stdout.split("\t")[0]);
    console.log(`installed size of the sidecar package: ${(sizeKb / 1024).toFixed(1)} MB`);
    expect(sizeKb).toBeLessThan(5 * 1024);

    const machines = (await (await rt.api("/v1/machines")).json()) as { machines: { id: string; connected: boolean; sidecarOutdated: boolean }[] };
    expect(machines.machines).toContainEqual(expect.objectContaining({ id: "laptop", connected: true, sidecarOutdated: false }));
    const post = (id: number, method: string, params: unknown, query = "") =>
      rt.api(`/machines/laptop/v1/acp/packaged${query}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      });
    expect((await post(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock")).status).toBe(200);
    const session = (await (await post(2, "session/new", { cwd: machineDir, mcpServers: [] })).json()) as { result: { sessionId: string } };
    const prompt = (await (
      await post(3, "session/prompt", { sessionId: session.result.sessionId, prompt: [{ type: "text", text: "hi from the package" }] })
    ).json()) as { result: { stopReason: string } };
    expect(prompt.result.stopReason).toBe("end_turn");
    expect((await rt.api("/machines/laptop/v1/acp/packaged", { method: "DELETE" })).status).toBe(204);
  }, 180_000);

  it("the connect command the worker hands out installs the sidecar from the worker itself and connects, with no registry package", async () => {
    const minted = await rt.api("/v1/machine-tokens", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ machine: "from-worker" }),
    });
    const { connectCommand } = (await minted.json()) as { connectCommand: string };
    expect(connectCommand).toContain(`--package='${rt.url}/v1/sidecar/agent-runtime-sidecar-${LATEST_SIDECAR_VERSION}.tgz'`);
    // The tarball the worker serves is the package as `npm pack` makes it: the same files.
    const served = await fetch(`${rt.url}/v1/sidecar/agent-runtime-sidecar-${LATEST_SIDECAR_VERSION}.tgz`);
    expect(served.status).toBe(200);
    const file = join(work, "served.tgz");
    await writeFile(file, Buffer.from(await served.arrayBuffer()));
    expect((await run("tar", ["-tzf", file])).stdout.trim().split("\n").sort()).toEqual((await run("tar", ["-tzf", tarball])).stdout.trim().split("\n").sort());
    expect((await fetch(`${rt.url}/v1/sidecar/agent-runtime-sidecar-0.0.1.tgz`)).status).toBe(404);

    // Another user's machine: its own empty folder and HOME (where `login` stores the token).
    const folder = join(work, "empty");
    const otherHome = join(work, "other-home");
    await mkdir(folder, { recursive: true });
    await mkdir(otherHome, { recursive: true });
    let output = "";
    const child = spawn("bash", ["-euc", connectCommand], {
      cwd: folder,
      env: userEnv({ HOME: otherHome }),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    try {
      await waitFor(async () => output.includes("connected to"), `the sidecar from the worker to connect:\n${output}`, 120_000);
      const machines = (await (await rt.api("/v1/machines")).json()) as { machines: { id: string; connected: boolean }[] };
      expect(machines.machines).toContainEqual(expect.objectContaining({ id: "from-worker", connected: true }));
      expect(existsSync(join(folder, "node_modules"))).toBe(false); // nothing installed into the folder: npx keeps it in its cache
    } finally {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      process.kill(-child.pid!, "SIGTERM");
      await exited;
    }
  }, 180_000);

  it("`status` says it is connected, to what, as which machine, and which agents are installed", async () => {
    const { stdout } = await run(join(machineDir, "node_modules", ".bin", "agent-runtime-sidecar"), ["status"], { cwd: machineDir, env: userEnv() });
    expect(stdout).toContain(`login:      machine 'laptop' for ${rt.url}`);
    expect(stdout).toContain(`connected:  yes, to ${rt.url} as 'laptop'`);
    expect(stdout).toContain("last error: none");
    expect(stdout).toContain("agents:     mock (built in)");
  });

  it("`service install` writes a systemd user unit that systemd accepts, running the installed sidecar; `uninstall` removes it", async () => {
    const bin = join(machineDir, "node_modules", ".bin", "agent-runtime-sidecar");
    const env = userEnv({ XDG_CONFIG_HOME: join(home, ".config") });
    const installed = await run(bin, ["service", "install", "--platform", "linux"], { cwd: machineDir, env });
    const unitPath = join(home, ".config", "systemd", "user", "agent-runtime-sidecar.service");
    expect(installed.stdout).toContain(`wrote ${unitPath}`);
    expect(installed.stdout).toContain("journalctl --user -u agent-runtime-sidecar");
    const unit = readFileSync(unitPath, "utf8");
    expect(unit).toContain(
      `ExecStart="${process.execPath}" "--max-semi-space-size=1" "--v8-pool-size=2" "${join(machineDir, "node_modules", "agent-runtime-sidecar", "dist", "sidecar.js")}" "connect" "--config-dir" "${join(home, ".config", "agent-runtime")}"`,
    );
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(unit).toMatch(/^RestartPreventExitStatus=2 3$/m);
    expect(unit).toMatch(/^WantedBy=default.target$/m);
    expect(unit).not.toContain("mt2."); // the unit holds no secret: the sidecar reads what login stored
    if (existsSync("/usr/bin/systemd-analyze")) {
      const verify = await run("systemd-analyze", ["verify", unitPath]).then(
        (r) => ({ code: 0, out: r.stderr }),
        (e: { code: number; stderr: string }) => ({ code: e.code, out: e.stderr }),
      );
      expect(verify.out.split("\n").filter((l) => l.includes(unitPath) || l.includes("agent-runtime-sidecar.service"))).toEqual([]);
      expect(verify.code).toBe(0);
    }
    const mac = await run(bin, ["service", "install", "--platform", "darwin"], { cwd: machineDir, env });
    const plist = readFileSync(join(home, "Library", "LaunchAgents", "dev.agent-runtime.sidecar.plist"), "utf8");
    expect(mac.stdout).toContain("launchctl bootstrap gui/");
    expect(plist).toContain("<string>connect</string>");
    expect(plist).toMatch(/<key>KeepAlive<\/key>\s*<dict>\s*<key>SuccessfulExit<\/key>\s*<false\/>/);

    const removed = await run(bin, ["service", "uninstall", "--platform", "linux"], { cwd: machineDir, env });
    expect(removed.stdout).toContain(`removed ${unitPath}`);
    expect(existsSync(unitPath)).toBe(false);
  });

  it("`npx file:<tarball>` and `npx --package <tarball>` run it too", async () => {
    for (const args of [
      ["--yes", `file:${tarball}`, "--help"],
      ["--yes", "--package", tarball, "agent-runtime-sidecar", "--help"],
    ]) {
      const { stdout } = await run("npx", args, { cwd: work, env: userEnv() });
      expect(stdout, args.join(" ")).toContain("agent-runtime-sidecar login --url");
    }
  }, 120_000);
});

describe("the version handshake", () => {
  it("tells an outdated sidecar how to upgrade, and the machines list shows it outdated", async () => {
    const token = await mintMachineToken(rt.tunnelSecret, "old-one");
    const ws = new WebSocket(`${rt.url.replace("http", "ws")}/_tunnel/old-one`, { headers: { authorization: `Bearer ${token}` } });
    const welcome = await new Promise<{ t: string; sidecar?: { outdated: boolean; upgrade: string | null; latest: string } }>((resolve, reject) => {
      ws.on("open", () =>
        ws.send(JSON.stringify({ t: "hello", protocol: TUNNEL_PROTOCOL_VERSION, machine: "old-one", sidecarVersion: "0.0.1", platform: "test" })),
      );
      ws.on("message", (data) => resolve(JSON.parse(data.toString())));
      ws.on("error", reject);
    });
    expect(welcome.t).toBe("welcome");
    expect(welcome.sidecar).toMatchObject({ outdated: true, latest: LATEST_SIDECAR_VERSION });
    expect(welcome.sidecar!.upgrade).toContain(`npm install -g agent-runtime-sidecar@${LATEST_SIDECAR_VERSION}`);
    const machines = (await (await rt.api("/v1/machines")).json()) as { machines: { id: string; sidecarOutdated: boolean }[] };
    expect(machines.machines.find((m) => m.id === "old-one")).toMatchObject({ sidecarOutdated: true });
    ws.terminate();
  });

  it("releases the sidecar package and the worker with the same version", () => {
    const sidecar = JSON.parse(readFileSync(join(ROOT, "sidecar", "package.json"), "utf8")) as { version: string };
    const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(sidecar.version).toBe(LATEST_SIDECAR_VERSION);
    expect(root.version).toBe(LATEST_SIDECAR_VERSION);
  });
});
