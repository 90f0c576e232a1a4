/**
 * MCP servers and per-folder configuration: the team's document written into each agent's own file on
 * every machine (the built-in mock agent's file is spelled like Claude Code's), its status, and the
 * per-directory entries the sandbox-agent SDK sets, which reach ACP sessions started in that folder.
 */
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpc } from "./acp-helpers";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime;
let home: string;
let project: string;

type McpStatus = {
  version: string;
  machines: { machine: string; version: string | null; servers: string[]; perAgent: Record<string, string[]>; errors: { agent: string; error: string }[] }[];
};

beforeAll(async () => {
  rt = await startRuntime({ machines: [] });
  home = join(rt.dir, "home");
  project = join(rt.dir, "project");
  await mkdir(join(home, ".mock-agent"), { recursive: true });
  await mkdir(project);
  // The developer's own server, and one under a name the team will use too: both are theirs to keep.
  await writeFile(
    join(home, ".mock-agent", "mcp.json"),
    JSON.stringify({ theme: "dark", mcpServers: { mine: { command: "mine" }, docs: { command: "their-docs" } } }),
  );
  await rt.addSidecar("local", { HOME: home });
});
afterAll(async () => {
  await rt?.dispose();
});

const put = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  rt.api(path, { method: "PUT", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

async function mockFile(): Promise<{ theme: string; mcpServers: Record<string, unknown> }> {
  return JSON.parse(await readFile(join(home, ".mock-agent", "mcp.json"), "utf8"));
}

describe("the team's MCP servers", () => {
  it("are written into each agent's file on every machine, beside the developer's own", async () => {
    const empty = await rt.api("/v1/config/mcp");
    expect(await empty.json()).toEqual({ servers: {} });
    expect(empty.headers.get("etag")).toBe('"0"');

    const document = {
      servers: {
        github: { type: "remote", url: "https://mcp.example.com/mcp", bearerTokenEnvVar: "GITHUB_TOKEN" },
        files: { type: "local", command: "npx", args: ["-y", "files-mcp"], env: { ROOT: "/work" } },
        docs: { type: "local", command: "team-docs" },
      },
    };
    const res = await put("/v1/config/mcp", document, { "if-match": '"0"' });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe('"1"');

    const status = await waitFor(async () => {
      const s = (await (await rt.api("/v1/config/mcp/status")).json()) as McpStatus;
      return s.machines.find((m) => m.machine === "local" && m.version === '"1"') && s;
    }, "the machine to apply the document");
    const local = status.machines[0]!;
    expect(local.perAgent.mock).toEqual(["github", "files"]);
    expect(local.errors).toEqual([{ agent: "mock", error: expect.stringMatching(/'docs'.*left as it is/) }]);

    const file = await mockFile();
    expect(file.theme).toBe("dark");
    expect(file.mcpServers.mine).toEqual({ command: "mine" });
    expect(file.mcpServers.docs).toEqual({ command: "their-docs" });
    expect(file.mcpServers.files).toEqual({ type: "stdio", command: "npx", args: ["-y", "files-mcp"], env: { ROOT: "/work" } });
    expect(file.mcpServers.github).toMatchObject({ type: "http", url: "https://mcp.example.com/mcp" });
  });

  it("are replaced as a whole by the next document, and only those the runtime wrote", async () => {
    expect((await put("/v1/config/mcp", { servers: {} }, { "if-match": '"0"' })).status).toBe(412);
    expect((await put("/v1/config/mcp", { servers: { files: { type: "local", command: "files-mcp" } } })).status).toBe(200);
    await waitFor(async () => !("github" in (await mockFile()).mcpServers), "github to be removed");
    const file = await mockFile();
    expect(Object.keys(file.mcpServers).sort()).toEqual(["docs", "files", "mine"]);
    expect(file.mcpServers.files).toEqual({ type: "stdio", command: "files-mcp", args: [], env: {} });
  });

  it("refuse bad documents and callers below admin", async () => {
    const bad = await put("/v1/config/mcp", { servers: { "bad name!": { type: "local", command: "x" } } });
    expect(bad.status).toBe(400);
    const optionLike = await put("/v1/config/mcp", { servers: { x: { type: "local", command: "--evil" } } });
    expect(optionLike.status).toBe(400);
    const notHttp = await put("/v1/config/mcp", { servers: { x: { type: "remote", url: "file:///etc/passwd" } } });
    expect(notHttp.status).toBe(400);
    const created = await rt.api("/v1/tokens", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "dev", role: "member" }),
    });
    const member = ((await created.json()) as { token: string }).token;
    const refused = await put("/v1/config/mcp", { servers: {} }, { authorization: `Bearer ${member}` });
    expect(refused.status).toBe(403);
    // A member may set a folder's entry on a machine in scope: that is the SDK's per-directory call.
    const folder = await put(
      `/v1/config/mcp?directory=${encodeURIComponent(project)}&mcpName=member-tool`,
      { type: "local", command: "tool" },
      {
        authorization: `Bearer ${member}`,
      },
    );
    expect(folder.status).toBe(204);
  });
});

describe("per-directory entries", () => {
  const q = (name: string, kind = "mcpName") => `directory=${encodeURIComponent(project)}&${kind}=${name}`;

  it("store MCP servers for a folder, read them back, and hand them to ACP sessions started there", async () => {
    expect((await put(`/v1/config/mcp?${q("linter")}`, { type: "local", command: "lint-mcp", args: ["--stdio"] })).status).toBe(204);
    expect(await (await rt.api(`/v1/config/mcp?${q("linter")}`)).json()).toEqual({ type: "local", command: "lint-mcp", args: ["--stdio"] });
    expect(existsSync(join(project, ".sandbox-agent", "config", "mcp.json"))).toBe(true);

    const init = await rpc(rt, "mcp-s", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
    expect(init.status).toBe(200);
    const inProject = await rpc(rt, "mcp-s", {
      jsonrpc: "2.0",
      id: 2,
      method: "session/new",
      params: { cwd: project, mcpServers: [{ name: "client-own", command: "own", args: [], env: [] }] },
    });
    const created = (await inProject.json()) as { result: { _meta: { mcpServers: string[] } } };
    expect(created.result._meta.mcpServers.sort()).toEqual(["client-own", "linter", "member-tool"]);
    const elsewhere = await rpc(rt, "mcp-s", { jsonrpc: "2.0", id: 3, method: "session/new", params: { cwd: home, mcpServers: [] } });
    expect(((await elsewhere.json()) as { result: { _meta?: unknown } }).result._meta).toBeUndefined(); // none given, none added

    expect((await rt.api(`/v1/config/mcp?${q("linter")}`, { method: "DELETE" })).status).toBe(204);
    const gone = await rt.api(`/v1/config/mcp?${q("linter")}`);
    expect(gone.status).toBe(404);
    expect(errorCode(await problemOf(gone))).toBe("not_found");
  });

  it("install a folder's skills where its agents read them, and remove them with the entry", async () => {
    const source = join(rt.dir, "my-skill");
    await mkdir(source);
    await writeFile(join(source, "SKILL.md"), "# Mine\nA folder's own skill.");
    expect((await put(`/v1/config/skills?${q("local", "skillName")}`, { sources: [{ type: "local", source }] })).status).toBe(204);
    expect(await (await rt.api(`/v1/config/skills?${q("local", "skillName")}`)).json()).toEqual({ sources: [{ type: "local", source }] });
    const installed = join(project, ".mock-agent", "skills", "my-skill", "SKILL.md");
    expect(await readFile(installed, "utf8")).toContain("A folder's own skill.");
    // The team's document is another thing: untouched by a folder's entry.
    expect(await (await rt.api("/v1/config/skills")).json()).toEqual({ sources: [] });

    expect((await rt.api(`/v1/config/skills?${q("local", "skillName")}`, { method: "DELETE" })).status).toBe(204);
    expect(existsSync(installed)).toBe(false);
  });

  it("answer clear problems for half a query, a missing folder and a bad entry", async () => {
    const half = await rt.api(`/v1/config/mcp?directory=${encodeURIComponent(project)}`);
    expect(half.status).toBe(400);
    expect((await problemOf(half)).detail).toMatch(/both directory and mcpName/);
    const missing = await put(`/v1/config/mcp?directory=${encodeURIComponent(join(rt.dir, "nope"))}&mcpName=x`, { type: "local", command: "x" });
    expect(missing.status).toBe(404);
    const bad = await put(`/v1/config/mcp?${q("x")}`, { type: "local" });
    expect(bad.status).toBe(400);
    expect((await problemOf(bad)).errors).toEqual([expect.objectContaining({ field: "command" })]);
    const nul = await rt.api(`/v1/config/mcp?directory=${encodeURIComponent("/tmp/a\u0000")}&mcpName=x`);
    expect(nul.status).toBe(400);
  });
});
