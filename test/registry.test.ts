/**
 * Agents from the ACP registry, against a registry and archives served on 127.0.0.1: an `npx` agent (a
 * package tarball) and a `binary` agent (a .tar.gz) install and finish a turn through the relay; a
 * checksum mismatch, an archive with `../` or a link out, and a platform the entry lacks are refused with
 * clear problems and leave nothing behind; the catalog stays when the registry goes away.
 */
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { create as createTar } from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpc } from "./acp-helpers";
import { problemOf, startRuntime, type Runtime } from "./harness";
import { type RegistryServer, startRegistryServer } from "./registry-server";

const MOCK_AGENT = new URL("../sidecar/dist/mock-agent.js", import.meta.url);

let rt: Runtime;
let registry: RegistryServer;
let agents: { id: string; name: string; version: string; description?: string; distribution: Record<string, unknown> }[];

/** A tar.gz of `root`'s entries. */
async function tarGz(root: string, entries: string[], opts: { preservePaths?: boolean } = {}): Promise<Buffer> {
  const out = `${root}.tgz`;
  await createTar({ gzip: true, file: out, cwd: root, portable: true, ...(opts.preservePaths ? { preservePaths: true } : {}) }, entries);
  return readFileSync(out);
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

beforeAll(async () => {
  registry = await startRegistryServer();
  const { base, files } = registry;
  // The catalog is asked again (with its ETag) on every read, so that a new version is seen at once.
  rt = await startRuntime({ vars: { ACP_REGISTRY_URL: registry.url, ACP_REGISTRY_MAX_AGE_MS: "1" } });
  const work = join(rt.dir, "archives");
  const agentScript = `#!/usr/bin/env node\n${readFileSync(MOCK_AGENT, "utf8")}`;

  // An npm package whose bin speaks ACP (the built-in mock agent, packaged as any agent is).
  const pkg = join(work, "npx", "package");
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "echo-acp-agent", version: "1.0.0", type: "module", bin: { "echo-acp-agent": "agent.js" } }));
  writeFileSync(join(pkg, "agent.js"), agentScript);
  files.set("/echo-acp-agent-1.0.0.tgz", await tarGz(join(work, "npx"), ["package"]));
  // Its next version, for the upgrade.
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "echo-acp-agent", version: "1.0.1", type: "module", bin: { "echo-acp-agent": "agent.js" } }));
  files.set("/echo-acp-agent-1.0.1.tgz", await tarGz(join(work, "npx"), ["package"]));
  // The same agent, for a Node far newer than any here (as claude-agent-acp needs 22 of a sidecar on 20).
  writeFileSync(
    join(pkg, "package.json"),
    JSON.stringify({ name: "future-acp-agent", version: "1.0.0", type: "module", bin: { "future-acp-agent": "agent.js" }, engines: { node: ">=99" } }),
  );
  files.set("/future-acp-agent-1.0.0.tgz", await tarGz(join(work, "npx"), ["package"]));

  // A binary distribution: a program (a shell script starting node) in a folder of the archive.
  const bin = join(work, "bin");
  mkdirSync(join(bin, "echo", "lib"), { recursive: true });
  writeFileSync(join(bin, "echo", "lib", "agent.mjs"), agentScript);
  writeFileSync(join(bin, "echo", "echo-agent"), '#!/bin/sh\nexec node "$(dirname "$0")/lib/agent.mjs" "$@"\n');
  chmodSync(join(bin, "echo", "echo-agent"), 0o755);
  const good = await tarGz(bin, ["echo"]);
  files.set("/echo-bin.tar.gz", good);
  // A binary distribution whose program is CommonJS (`require`, `__dirname`) in a plain `.js` file, as
  // many agents ship; the data folder sits inside a project of `"type": "module"`, as `.state/` does under
  // `npm start`. Without a package boundary of its own, Node would load it as an ES module and it would die.
  const cjs = join(work, "cjs");
  mkdirSync(join(cjs, "cjs", "lib"), { recursive: true });
  writeFileSync(join(cjs, "cjs", "lib", "agent.mjs"), agentScript);
  writeFileSync(join(cjs, "cjs", "agent.js"), 'const path = require("node:path");\nimport(path.join(__dirname, "lib", "agent.mjs"));\n');
  writeFileSync(join(cjs, "cjs", "cjs-agent"), '#!/bin/sh\nexec node "$(dirname "$0")/agent.js" "$@"\n');
  chmodSync(join(cjs, "cjs", "cjs-agent"), 0o755);
  files.set("/cjs-bin.tar.gz", await tarGz(cjs, ["cjs"]));
  writeFileSync(join(rt.dir, "package.json"), JSON.stringify({ name: "a-project", private: true, type: "module" }));

  // An archive that writes outside its folder, and one that links out of it.
  const escaping = join(work, "escape", "inner");
  mkdirSync(escaping, { recursive: true });
  writeFileSync(join(work, "escape", "evil.txt"), "outside");
  writeFileSync(join(escaping, "agent"), "#!/bin/sh\n");
  files.set("/escape.tar.gz", await tarGz(escaping, ["agent", "../evil.txt"], { preservePaths: true }));
  const link = join(work, "link");
  mkdirSync(link, { recursive: true });
  writeFileSync(join(link, "agent"), "#!/bin/sh\n");
  symlinkSync("/etc/passwd", join(link, "passwd"));
  files.set("/link.tar.gz", await tarGz(link, ["agent", "passwd"]));

  const binary = (archive: string, extra: Record<string, string> = {}) => ({
    "linux-x86_64": { archive: `${base}${archive}`, cmd: "./echo/echo-agent", ...extra },
  });
  agents = [
    {
      id: "echo-npx",
      name: "Echo (npx)",
      version: "1.0.0",
      description: "the mock agent as an npm package",
      distribution: { npx: { package: `${base}/echo-acp-agent-1.0.0.tgz` } },
    },
    {
      id: "echo-bin",
      name: "Echo (binary)",
      version: "1.0.0",
      description: "the mock agent as a binary",
      distribution: { binary: binary("/echo-bin.tar.gz", { sha256: sha256(good) }) },
    },
    {
      id: "cjs-bin",
      name: "CommonJS (binary)",
      version: "1.0.0",
      distribution: { binary: { "linux-x86_64": { archive: `${base}/cjs-bin.tar.gz`, cmd: "./cjs/cjs-agent" } } },
    },
    { id: "bad-sum", name: "Bad checksum", version: "1.0.0", distribution: { binary: binary("/echo-bin.tar.gz", { sha256: "0".repeat(64) }) } },
    { id: "escape", name: "Escapes", version: "1.0.0", distribution: { binary: { "linux-x86_64": { archive: `${base}/escape.tar.gz`, cmd: "./agent" } } } },
    { id: "link-out", name: "Links out", version: "1.0.0", distribution: { binary: { "linux-x86_64": { archive: `${base}/link.tar.gz`, cmd: "./agent" } } } },
    {
      id: "mac-only",
      name: "Mac only",
      version: "1.0.0",
      distribution: { binary: { "darwin-aarch64": { archive: `${base}/echo-bin.tar.gz`, cmd: "./echo/echo-agent" } } },
    },
    { id: "future", name: "Needs Node 99", version: "1.0.0", distribution: { npx: { package: `${base}/future-acp-agent-1.0.0.tgz` } } },
    { id: "py-agent", name: "Python", version: "1.0.0", distribution: { uvx: { package: "py-agent==1.0.0" } } },
  ];
  registry.setAgents(agents);
}, 120_000);

afterAll(async () => {
  await rt?.dispose();
  await registry?.close();
});

const install = (agent: string) => rt.api(`/v1/agents/${agent}/install`, { method: "POST" });
const agentFolder = (agent: string) => join(rt.dir, "data-local", "agents", agent);

/** A whole turn with the agent through the relay. */
async function turn(agent: string, server = `srv-${agent}`): Promise<string> {
  const init = await rpc(
    rt,
    server,
    { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } },
    `?agent=${agent}`,
  );
  expect(init.status).toBe(200);
  const created = (await (await rpc(rt, server, { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).json()) as {
    result: { sessionId: string };
  };
  const prompted = await rpc(rt, server, {
    jsonrpc: "2.0",
    id: 3,
    method: "session/prompt",
    params: { sessionId: created.result.sessionId, prompt: [{ type: "text", text: `hello ${agent}` }] },
  });
  return ((await prompted.json()) as { result: { stopReason: string } }).result.stopReason;
}

describe("agents from the ACP registry", () => {
  it("lists the registry's agents beside the machine's, with what this machine can install", async () => {
    const {
      agents,
      platform,
      registry: source,
    } = (await (await rt.api("/v1/agents")).json()) as {
      agents: { id: string; installed: boolean; registry: { installable: boolean; reason: string | null; distributions: string[] } | null }[];
      platform: string;
      registry: { source: string };
    };
    expect(platform).toBe(`${process.platform}-${process.arch}`);
    expect(source.source).toBe("registry");
    const byId = Object.fromEntries(agents.map((a) => [a.id, a]));
    expect(byId.mock!.installed).toBe(true); // the built-in ones stay
    expect(byId["echo-npx"]).toMatchObject({ installed: false, registry: { installable: true, distributions: ["npx"] } });
    expect(byId["mac-only"]!.registry).toMatchObject({ installable: false });
    expect(byId["mac-only"]!.registry!.reason).toContain("darwin-aarch64");
    // One agent says the same, judged for this machine's platform.
    const one = (await (await rt.api("/v1/agents/mac-only")).json()) as { registry: { installable: boolean; reason: string } };
    expect(one.registry).toMatchObject({ installable: false });
    expect(one.registry.reason).toContain("linux-x86_64");
    const echoBin = (await (await rt.api("/v1/agents/echo-bin")).json()) as { registry: { installable: boolean } };
    expect(echoBin.registry.installable).toBe(true);
  });

  it("installs an npx agent into the data folder, idempotently, and it finishes a turn", async () => {
    const res = await install("echo-npx");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ already_installed: false, artifacts: [{ kind: "agent_process", source: "npm", version: "1.0.0" }] });
    expect(((await (await install("echo-npx")).json()) as { already_installed: boolean }).already_installed).toBe(true);
    expect(await turn("echo-npx")).toBe("end_turn");
    const info = (await (await rt.api("/v1/agents/echo-npx")).json()) as { installed: boolean; installedVersion: string };
    expect(info).toMatchObject({ installed: true, installedVersion: "1.0.0" });
  });

  it("upgrades an agent when the registry moves on: the new version installs beside, and runs", async () => {
    type Listed = { agents: { id: string; installedVersion: string | null; updateAvailable: boolean | null }[] };
    const listed = async () => ((await (await rt.api("/v1/agents")).json()) as Listed).agents.find((a) => a.id === "echo-npx")!;
    expect(await listed()).toMatchObject({ installedVersion: "1.0.0", updateAvailable: false });
    registry.setAgents(
      agents.map((a) =>
        a.id === "echo-npx" ? { ...a, version: "1.0.1", distribution: { npx: { package: `${registry.base}/echo-acp-agent-1.0.1.tgz` } } } : a,
      ),
    );
    expect(await listed()).toMatchObject({ installedVersion: "1.0.0", updateAvailable: true });
    const res = await install("echo-npx");
    expect(await res.json()).toMatchObject({ already_installed: false, artifacts: [{ version: "1.0.1" }] });
    expect(await listed()).toMatchObject({ installedVersion: "1.0.1", updateAvailable: false });
    expect(readdirSync(agentFolder("echo-npx")).sort()).toEqual(["1.0.0-npx", "1.0.1-npx", "registry.json"]);
    expect(await turn("echo-npx", "srv-echo-npx-2")).toBe("end_turn");
    registry.setAgents(agents);
  });

  it("installs a binary agent after checking its checksum, and it finishes a turn", async () => {
    const res = await install("echo-bin");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ already_installed: false, artifacts: [{ source: "binary", version: "1.0.0" }] });
    expect(await turn("echo-bin")).toBe("end_turn");
  });

  it("runs a CommonJS agent from a binary archive whose data folder is inside an ES-module project (its own package boundary)", async () => {
    expect((await install("cjs-bin")).status).toBe(200);
    expect(JSON.parse(readFileSync(join(rt.dir, "data-local", "agents", "package.json"), "utf8"))).toMatchObject({ type: "commonjs" });
    expect(await turn("cjs-bin")).toBe("end_turn");
  });

  it("refuses a checksum mismatch, an archive that escapes or links out, and a platform the entry lacks, leaving nothing", async () => {
    const mismatch = await problemOf(await install("bad-sum"));
    expect(mismatch).toMatchObject({ status: 502, type: "urn:agent-runtime:error:package_unavailable" });
    expect(mismatch.detail).toContain("checksum");
    for (const agent of ["escape", "link-out"]) {
      const refused = await problemOf(await install(agent));
      expect(refused.status, agent).toBe(502);
      expect(refused.detail, agent).toMatch(/outside the folder/);
    }
    const platform = await problemOf(await install("mac-only"));
    expect(platform).toMatchObject({ status: 400, type: "urn:agent-runtime:error:unsupported_agent" });
    expect(platform.detail).toContain("darwin-aarch64");
    for (const agent of ["bad-sum", "escape", "link-out", "mac-only"]) {
      expect(existsSync(agentFolder(agent)) ? readdirSync(agentFolder(agent)) : [], agent).toEqual([]);
    }
    expect(existsSync(join(rt.dir, "data-local", "agents", "evil.txt"))).toBe(false);
  });

  it("says what a uvx agent needs when uv is not on the machine, and refuses an id the registry lacks", async () => {
    const uvx = await problemOf(await install("py-agent"));
    // This machine has no uv: the problem names it (with uv present, uvx runs the package).
    expect(uvx.status).toBe(502);
    expect(uvx.detail).toContain("uv is not on this machine's PATH");
    const unknown = await problemOf(await install("no-such-agent"));
    expect(unknown).toMatchObject({ status: 400, type: "urn:agent-runtime:error:unsupported_agent" });
  });

  it("runs a package that needs a newer Node on the one given with --agent-node, and says what it needs without one", async () => {
    const refused = await problemOf(await install("future"));
    expect(refused.status).toBe(502);
    expect(refused.detail).toContain("needs Node >=99");
    expect(refused.detail).toContain("--agent-node");
    expect(existsSync(agentFolder("future")) ? readdirSync(agentFolder("future")) : []).toEqual([]);
    // A machine whose owner named a newer Node: here a wrapper that says it is 99 and runs this one.
    const node99 = join(rt.dir, "node99");
    writeFileSync(node99, `#!/bin/sh\n[ "$1" = "--version" ] && { echo v99.0.0; exit 0; }\nexec "${process.execPath}" "$@"\n`);
    chmodSync(node99, 0o755);
    await rt.addSidecar("newer", { AGENT_RUNTIME_AGENT_NODE: node99 });
    const res = await rt.api("/machines/newer/v1/agents/future/install", { method: "POST" });
    expect(res.status).toBe(200);
    const initialized = await rt.api("/machines/newer/v1/acp/future-1?agent=future", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }),
    });
    expect(((await initialized.json()) as { result: { protocolVersion: number } }).result.protocolVersion).toBe(1);
    const processes = (await (await rt.api("/machines/newer/v1/processes")).json()) as { processes: { command: string; label: string | null }[] };
    expect(processes.processes.find((p) => p.label === "acp:future-1")?.command).toBe(node99);
  });

  it("keeps the catalog it read when the registry goes away", async () => {
    await registry.close();
    const catalog = (await (await rt.api("/v1/registry/agents")).json()) as { source: string; agents: { id: string }[] };
    expect(["cache", "stale"]).toContain(catalog.source);
    expect(catalog.agents.map((a) => a.id)).toContain("echo-npx");
  });
});
