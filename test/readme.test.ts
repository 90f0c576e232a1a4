/**
 * The docs' examples (the README's tour and the pages of docs/, each read from its page by
 * test/docs-examples.ts) run as written against the real runtime, and the sidecar's command line does
 * what its --help and docs/deploying.md say.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { promisify } from "node:util";
import { ROOT, SIDECAR_BUNDLE } from "../dev/runtime";
import { mintMachineToken } from "@agent-runtime/protocol/machine-token";
import { example } from "./docs-examples";
import { startRuntime, type Runtime, waitFor } from "./harness";
import { type PreviewApp, startPreviewApp } from "./preview-app";

const run = promisify(execFile);
const README = readFileSync(join(ROOT, "README.md"), "utf8");

let rt: Runtime;
/** An app on the machine for the preview example, its port exposed. */
let app: PreviewApp;
beforeAll(async () => {
  app = await startPreviewApp();
  rt = await startRuntime({ machines: [] });
  await rt.addSidecar("local", { AGENT_RUNTIME_EXPOSE_PORTS: String(app.port) });
});
afterAll(async () => {
  await rt?.dispose();
  await app?.close();
});

describe("the examples of the README and docs/", () => {
  it("starts with the two commands, install and start, then the test command", () => {
    const blocks = [...README.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
    expect(blocks[0]).toMatch(/^npm install\nnpm start/);
    expect(blocks[1]).toMatch(/^npm test/);
  });

  it("the curl walk-through drives the mock agent", async () => {
    // As a person runs it, line by line: the stream read ends by its --max-time (curl exit 28), the rest goes on.
    const { stdout } = await run("bash", ["-uc", example("README.md", "curl")], { env: { ...process.env, URL: rt.url, TOKEN: rt.token } });
    expect(stdout).toContain('"machines":[{"id":"local","connected":true');
    expect(stdout).toMatch(/session: mock-[0-9a-f-]{36}\n/);
    expect(stdout).toMatch(/"sessions":\[\{"id":"ses-[0-9a-f]{16}-local","sessionId":"mock-/);
    expect(stdout).toContain('"result":{"stopReason":"end_turn","usage":{"inputTokens":');
    expect(stdout).toMatch(/id: 1\nevent: message\ndata: \{"jsonrpc":"2.0","method":"session\/update"/);
    expect(((await (await rt.api("/v1/acp")).json()) as { servers: unknown[] }).servers).toEqual([]); // DELETE stopped it
  });

  it("the review example reads a session's changes, reverts a turn, commits, pushes and answers where to open a pull request", async () => {
    const folder = join(rt.dir, "readme-review");
    const origin = join(rt.dir, "readme-origin.git");
    const git = (cwd: string, ...args: string[]) => run("git", args, { cwd });
    mkdirSync(folder);
    await git(rt.dir, "init", "-q", "--bare", origin);
    await git(folder, "init", "-q", "-b", "main");
    await git(folder, "config", "user.name", "Readme Reader");
    await git(folder, "config", "user.email", "reader@example.com");
    await git(folder, "remote", "add", "origin", origin);
    writeFileSync(join(folder, "README.md"), "# app\n");
    await git(folder, "add", ".");
    await git(folder, "commit", "-q", "-m", "start");
    const post = (id: number, method: string, params: unknown, query = "") =>
      rt.api(`/v1/acp/readme-review${query}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      });
    await post(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock");
    const { result } = (await (await post(2, "session/new", { cwd: folder, mcpServers: [] })).json()) as { result: { sessionId: string } };
    for (const [id, text] of [
      [3, "/write src/app.ts const version = 1;"],
      [4, "/write src/app.ts const version = 2;"],
    ] as const)
      await post(id, "session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text }] });
    const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
    const session = sessions.find((s) => s.sessionId === result.sessionId)!.id;

    const { stdout } = await run("bash", ["-uc", example("docs/review-and-ship.md", "review")], {
      env: { ...process.env, URL: rt.url, TOKEN: rt.token, SESSION: session, FOLDER: folder },
    });
    expect(stdout).toContain('"totals":{"files":1,"additions":1,"deletions":0}');
    expect(stdout).toContain("-const version = 1;\\n+const version = 2;");
    expect(stdout).toContain('{"turn":2,"restored":["src/app.ts"],"removed":[]}');
    expect(readFileSync(join(folder, "src/app.ts"), "utf8")).toBe("const version = 1;\n");
    expect(stdout).toContain('"branch":"main","summary"');
    expect(stdout).toContain('"remote":"origin","branch":"main"');
    expect(stdout).toContain('"opened":false,"url":null');
    expect((await git(origin, "log", "-1", "--format=%s", "main")).stdout.trim()).toBe("Fix the login page");
  });

  it("the policy example sets the team's rules and tries a request against them", async () => {
    const { stdout } = await run("bash", ["-uc", example("docs/policy-and-sandboxes.md", "policy")], { env: { ...process.env, URL: rt.url, TOKEN: rt.token } });
    expect(stdout).toContain('{"name":"no rm","match":{"kinds":["execute"],"commands":["rm *"]},"decision":"deny"}');
    // The tester also says which sandbox that agent would start in: no sandbox rule, so a person's session's default.
    expect(stdout).toContain(
      '{"decision":"deny","rule":0,"ruleName":"no rm","source":"team","ask":null,"sandbox":{"origin":"session","requested":{"profile":"full","network":{"mode":"open","allow":[]},"denyRead":[]},"rule":null,"ruleName":null}}',
    );
    await rt.api("/v1/config/policy", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ rules: [] }) });
  });

  it("the sandbox example sets the team's sandbox rules and says which sandbox a triggered task gets", async () => {
    const { stdout } = await run("bash", ["-uc", example("docs/policy-and-sandboxes.md", "sandbox-rules")], {
      env: { ...process.env, URL: rt.url, TOKEN: rt.token },
    });
    expect(stdout).toContain('{"name":"triggered","match":{"origins":["trigger"]},"profile":"workspace","network":{"mode":"allowlist","allow":["github.com"]}');
    expect(stdout).toContain(
      '"sandbox":{"origin":"trigger","requested":{"profile":"workspace","network":{"mode":"allowlist","allow":["github.com","api.anthropic.com"]},"denyRead":[]},"rule":0,"ruleName":"triggered"}',
    );
    await rt.api("/v1/config/policy", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ rules: [] }) });
  });

  it("the preview example lists the machine's ports and opens the app through a link", async () => {
    const { stdout } = await run("bash", ["-uc", example("docs/previews.md", "preview")], {
      env: { ...process.env, URL: rt.url, TOKEN: rt.token, PORT: String(app.port) },
    });
    expect(stdout).toContain(`"port":${app.port},"addresses":["127.0.0.1"]`);
    expect(stdout).toContain(`"expose":"${app.port}"`);
    expect(stdout.endsWith("the app's home page")).toBe(true);
  });

  it("the tasks example starts a task and lists it once it succeeded", async () => {
    const folder = join(rt.dir, "readme-task");
    mkdirSync(folder);
    const start = example("docs/tasks.md", "tasks").split("\n").slice(0, 3).join("\n");
    const { stdout } = await run("bash", ["-uc", start], { env: { ...process.env, URL: rt.url, TOKEN: rt.token, FOLDER: folder } });
    const task = JSON.parse(stdout) as { id: string; state: string };
    expect(["queued", "running"]).toContain(task.state);
    await waitFor(async () => ((await (await rt.api(`/v1/tasks/${task.id}`)).json()) as { state: string }).state === "succeeded", "the task to succeed");
    const listed = await run("bash", ["-uc", example("docs/tasks.md", "tasks")], { env: { ...process.env, URL: rt.url, TOKEN: rt.token, FOLDER: folder } });
    expect(listed.stdout).toContain(`"id":"${task.id}"`);
    expect(readFileSync(join(folder, "notes.txt"), "utf8")).toBe("nightly notes\n");
  });

  it("the sandbox-agent SDK example writes a file, runs a command and drives a terminal", async () => {
    const file = join(ROOT, "test", `.readme-sdk-example-${process.pid}.ts`);
    writeFileSync(file, example("docs/deploying.md", "sandbox-agent-sdk"));
    try {
      const { stdout } = await run(process.execPath, [join(ROOT, "node_modules", "tsx", "dist", "cli.mjs"), file], {
        env: { ...process.env, URL: rt.url, TOKEN: rt.token },
      });
      expect(stdout).toContain("hello from the runtime | exit 0");
      expect(stdout).toContain("answer=42");
      expect(stdout).toContain("shell exited with 0");
    } finally {
      rmSync(file, { force: true });
    }
  });

  it.each(["acp-http-client", "acp-transport"])("the %s example runs a permission round trip", async (name) => {
    const file = join(ROOT, "test", `.readme-${name}-example-${process.pid}.ts`);
    writeFileSync(file, example("docs/api.md", name));
    try {
      const { stdout } = await run(process.execPath, [join(ROOT, "node_modules", "tsx", "dist", "cli.mjs"), file], {
        env: { ...process.env, URL: rt.url, TOKEN: rt.token },
      });
      expect(stdout).toContain("Permission granted: wrote hello.txt");
      expect(stdout).toContain("stopReason: end_turn");
    } finally {
      rmSync(file, { force: true });
    }
  });
});

describe("the sidecar's command line", () => {
  async function sidecar(args: string[], env: Record<string, string> = {}, input?: string) {
    return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, [SIDECAR_BUNDLE, ...args], { env: { PATH: process.env.PATH!, HOME: rt.dir, ...env } }, (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin!.on("error", () => undefined); // a command that exits before reading its input is fine
      child.stdin!.end(input ?? "");
    });
  }

  it("--help explains every flag with its environment variable and the exit codes", async () => {
    const { code, stdout } = await sidecar(["--help"]);
    expect(code).toBe(0);
    for (const flag of [
      "login",
      "connect",
      "--url",
      "--machine",
      "--token-stdin",
      "--token-file",
      "--config-dir",
      "--data-dir",
      "--workdir",
      "--expose-ports",
      "--log-level",
      "--help",
    ])
      expect(stdout).toContain(flag);
    for (const variable of [
      "AGENT_RUNTIME_URL",
      "AGENT_RUNTIME_MACHINE",
      "AGENT_RUNTIME_CONFIG_DIR",
      "AGENT_RUNTIME_DATA_DIR",
      "AGENT_RUNTIME_WORKDIR",
      "AGENT_RUNTIME_EXPOSE_PORTS",
      "SIDECAR_LOG_LEVEL",
    ])
      expect(stdout).toContain(variable);
    expect(stdout).toMatch(/Exit codes: 0 .*; 1 bad usage; 2 /);
  });

  it("exits 1 with a clear message on bad usage", async () => {
    const config = ["--config-dir", join(rt.dir, "no-config")];
    for (const [args, message] of [
      [["connect", "--machine", "m", "--token-stdin", ...config], "--url is required"],
      [["connect", "--url", "ftp://x", "--machine", "m", "--token-stdin", ...config], "--url is required"],
      [["connect", "--url", "http://127.0.0.1:1", "--machine", "../m", "--token-stdin"], "--machine is required"],
      [["connect", "--url", "http://127.0.0.1:1", "--machine", "m", ...config], "no machine token"],
      [["connect", "--url", "http://127.0.0.1:1", "--machine", "m", "--token-stdin"], "no machine token on standard input"],
      [["launch"], "unknown command"],
    ] as const) {
      const { code, stderr } = await sidecar([...args]);
      expect(code, args.join(" ")).toBe(1);
      expect(stderr).toContain(message);
    }
  });

  it("never takes the machine token where agents could read it: not an argument, not a variable; no worker secret in its environment", async () => {
    const connect = ["connect", "--url", rt.url, "--machine", "m"];
    const asArgument = await sidecar([...connect, "--token", "mt2.m.1.0.x"]);
    expect(asArgument.code).toBe(1);
    expect(asArgument.stderr).toContain("is not taken from --token");
    const asVariable = await sidecar(connect, { AGENT_RUNTIME_TOKEN: "mt2.m.1.0.x" });
    expect(asVariable.code).toBe(1);
    expect(asVariable.stderr).toContain("is not taken from AGENT_RUNTIME_TOKEN");
    for (const secret of ["TUNNEL_SECRET", "API_TOKEN"]) {
      const withSecret = await sidecar([...connect, "--token-stdin"], { [secret]: "x" }, "mt2.m.1.0.x\n");
      expect(withSecret.code, secret).toBe(1);
      expect(withSecret.stderr).toContain(`${secret} is set in this environment`);
    }
    const loose = join(rt.dir, "loose-token");
    writeFileSync(loose, "mt2.m.1.0.x\n", { mode: 0o644 });
    const looseFile = await sidecar([...connect, "--token-file", loose]);
    expect(looseFile.code).toBe(1);
    expect(looseFile.stderr).toContain("can be read by other users");
  });

  it("login stores the token readable by its user only; connect then needs no flag; `token` mints what the worker checks", async () => {
    const { stdout, code } = await sidecar(["token", "--machine", "laptop"], { TUNNEL_SECRET: rt.tunnelSecret });
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(await mintMachineToken(rt.tunnelSecret, "laptop"));
    const later = await sidecar(["token", "--machine", "laptop", "--generation", "3", "--expires-in", "3600"], { TUNNEL_SECRET: rt.tunnelSecret });
    expect(later.stdout).toMatch(/^mt2\.laptop\.3\.\d{10}\./);

    const configDir = join(rt.dir, "config");
    const login = await sidecar(["login", "--url", rt.url, "--machine", "env-machine", "--config-dir", configDir], {}, "mt2.env-machine.1.0.wrong\n");
    expect(login.code, login.stderr).toBe(0);
    expect(statSync(join(configDir, "credentials.json")).mode & 0o777).toBe(0o600);
    expect(statSync(configDir).mode & 0o777).toBe(0o700);
    const bad = await sidecar(["connect"], { AGENT_RUNTIME_CONFIG_DIR: configDir });
    expect(bad.code).toBe(2); // it used what login stored, dialed, and the worker refused the wrong token
    expect(bad.stderr).toContain("refused this machine's token");
  });
});
