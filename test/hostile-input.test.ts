/**
 * Hostile input, table-driven, over every endpoint: each case gets the documented 4xx problem+json,
 * the worker never answers 500 to bad input, and the sidecar never crashes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorCode, startRuntime, type Runtime } from "./harness";

let rt: Runtime;

beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"] });
});
afterAll(async () => {
  await rt?.dispose();
});

interface Case {
  name: string;
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
  status: number;
  code?: string;
}

const JSON_HEADERS = { "content-type": "application/json" };
const json = (value: unknown) => JSON.stringify(value);
const huge = "x".repeat(1024 * 1024 + 10);
const init = json({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} });

/** Path segments that must never be taken as a path, an option or a different resource. */
const BAD_IDS = ["..%2F..%2Fetc", "%2e%2e%2f", "-rf", "a%00b", "%E2%80%AEevil", "a%20b", "x".repeat(200)];

const cases: Case[] = [
  // ---- bodies that are not what the endpoint reads
  ...["/v1/acp/s?agent=mock", "/v1/processes", "/v1/agents/mock/install", "/v1/config/skills"].flatMap((path): Case[] => {
    const method = path.includes("skills") ? "PUT" : "POST";
    return [
      { name: `invalid JSON to ${path}`, method, path, body: "{oops", headers: JSON_HEADERS, status: 400, code: "invalid_request" },
      { name: `text/plain to ${path}`, method, path, body: "{}", headers: { "content-type": "text/plain" }, status: 415, code: "unsupported_media_type" },
      {
        name: `form data to ${path}`,
        method,
        path,
        body: "a=b",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        status: 415,
        code: "unsupported_media_type",
      },
      { name: `a body over 1 MiB to ${path}`, method, path, body: json({ pad: huge }), headers: JSON_HEADERS, status: 413, code: "payload_too_large" },
      { name: `a JSON array to ${path}`, method, path, body: "[]", headers: JSON_HEADERS, status: 400, code: "invalid_request" },
      { name: `JSON null to ${path}`, method, path, body: "null", headers: JSON_HEADERS, status: 400, code: "invalid_request" },
    ];
  }),
  // ---- JSON-RPC envelopes
  { name: "jsonrpc 1.0", method: "POST", path: "/v1/acp/s?agent=mock", body: json({ jsonrpc: "1.0", id: 1, method: "x" }), headers: JSON_HEADERS, status: 400 },
  {
    name: "method and result at once",
    method: "POST",
    path: "/v1/acp/s?agent=mock",
    body: json({ jsonrpc: "2.0", id: 1, method: "x", result: 1 }),
    headers: JSON_HEADERS,
    status: 400,
  },
  {
    name: "result and error at once (a response is one or the other)",
    method: "POST",
    path: "/v1/acp/s",
    body: json({ jsonrpc: "2.0", id: 1, result: {}, error: { code: 1, message: "x" } }),
    headers: JSON_HEADERS,
    status: 400,
  },
  {
    name: "a response without id",
    method: "POST",
    path: "/v1/acp/s?agent=mock",
    body: json({ jsonrpc: "2.0", result: {} }),
    headers: JSON_HEADERS,
    status: 400,
  },
  {
    name: "an object as id",
    method: "POST",
    path: "/v1/acp/s?agent=mock",
    body: json({ jsonrpc: "2.0", id: { a: 1 }, method: "x" }),
    headers: JSON_HEADERS,
    status: 400,
  },
  {
    name: "a number as method",
    method: "POST",
    path: "/v1/acp/s?agent=mock",
    body: json({ jsonrpc: "2.0", id: 1, method: 5 }),
    headers: JSON_HEADERS,
    status: 400,
  },
  {
    name: "an unknown agent",
    method: "POST",
    path: "/v1/acp/s?agent=..%2F..%2Fbin%2Fsh",
    body: init,
    headers: JSON_HEADERS,
    status: 400,
    code: "unsupported_agent",
  },
  { name: "an option-like agent", method: "POST", path: "/v1/acp/s?agent=--help", body: init, headers: JSON_HEADERS, status: 400, code: "unsupported_agent" },
  {
    name: "an Accept that refuses JSON",
    method: "POST",
    path: "/v1/acp/s?agent=mock",
    body: init,
    headers: { ...JSON_HEADERS, accept: "application/json;q=0" },
    status: 406,
    code: "not_acceptable",
  },
  { name: "a non-numeric Last-Event-ID", method: "GET", path: "/v1/acp/s", headers: { accept: "text/event-stream", "last-event-id": "1; DROP" }, status: 400 },
  { name: "an unknown server id, stopped", method: "DELETE", path: "/v1/acp/never-existed", status: 204 },
  // ---- path-like identifiers in every path
  ...BAD_IDS.flatMap((bad): Case[] => [
    { name: `server id '${bad}'`, method: "POST", path: `/v1/acp/${bad}?agent=mock`, body: init, headers: JSON_HEADERS, status: 400 },
    { name: `process id '${bad}'`, method: "GET", path: `/v1/processes/${bad}`, status: 400 },
    { name: `process id '${bad}' (kill)`, method: "POST", path: `/v1/processes/${bad}/kill`, status: 400 },
    { name: `agent '${bad}'`, method: "GET", path: `/v1/agents/${bad}`, status: 400, code: "unsupported_agent" },
    { name: `machine '${bad}'`, method: "GET", path: `/machines/${bad}/v1/acp`, status: 400 },
  ]),
  // ---- install: versions are never a command line
  ...[
    "1.0; rm -rf ~",
    "$(id)",
    "`id`",
    "--registry=http://127.0.0.1:1",
    "-g",
    "file:../x",
    "git+https://x/y.git",
    "1.0\n2.0",
    "latest && curl x",
    "../../etc/passwd",
    "ünïcode",
    "",
    "good.tgz",
    "evil.tar.gz",
    "owner/repo",
    "./x",
  ].map(
    (version): Case => ({
      name: `agentVersion ${JSON.stringify(version)}`,
      method: "POST",
      path: "/v1/agents/claude/install",
      body: json({ agentVersion: version }),
      headers: JSON_HEADERS,
      status: 400,
      code: "invalid_request",
    }),
  ),
  { name: "reinstall as a string", method: "POST", path: "/v1/agents/claude/install", body: json({ reinstall: "true" }), headers: JSON_HEADERS, status: 400 },
  {
    name: "install an unknown agent",
    method: "POST",
    path: "/v1/agents/gpt/install",
    body: "{}",
    headers: JSON_HEADERS,
    status: 400,
    code: "unsupported_agent",
  },
  // ---- processes: no shell, so metacharacters are just a name that does not exist
  {
    name: "a shell line as command",
    method: "POST",
    path: "/v1/processes",
    body: json({ command: "ls; rm -rf /tmp/x" }),
    headers: JSON_HEADERS,
    status: 404,
    code: "not_found",
  },
  {
    name: "an option as command",
    method: "POST",
    path: "/v1/processes",
    body: json({ command: "--version" }),
    headers: JSON_HEADERS,
    status: 404,
    code: "not_found",
  },
  { name: "a control character in command", method: "POST", path: "/v1/processes", body: json({ command: "ls\u0000" }), headers: JSON_HEADERS, status: 400 },
  {
    name: "a NUL byte in args",
    method: "POST",
    path: "/v1/processes",
    body: json({ command: "ls", args: ["a\u0000b"] }),
    headers: JSON_HEADERS,
    status: 400,
    code: "invalid_request",
  },
  {
    name: "a NUL byte in env",
    method: "POST",
    path: "/v1/processes",
    body: json({ command: "ls", env: { A: "x\u0000y" } }),
    headers: JSON_HEADERS,
    status: 400,
    code: "invalid_request",
  },
  { name: "a missing command", method: "POST", path: "/v1/processes", body: json({ args: ["-la"] }), headers: JSON_HEADERS, status: 400 },
  { name: "args of the wrong type", method: "POST", path: "/v1/processes", body: json({ command: "ls", args: [1, 2] }), headers: JSON_HEADERS, status: 400 },
  {
    name: "env with a bad name",
    method: "POST",
    path: "/v1/processes",
    body: json({ command: "ls", env: { "A=B": "x" } }),
    headers: JSON_HEADERS,
    status: 400,
  },
  { name: "an extra field", method: "POST", path: "/v1/processes", body: json({ command: "ls", shell: true }), headers: JSON_HEADERS, status: 400 },
  {
    name: "a cwd that does not exist",
    method: "POST",
    path: "/v1/processes",
    body: json({ command: "ls", cwd: "/definitely/../not/here" }),
    headers: JSON_HEADERS,
    status: 404,
  },
  {
    name: "input with a bad encoding",
    method: "POST",
    path: "/v1/processes/proc_000000001/input",
    body: json({ data: "x", encoding: "utf16" }),
    headers: JSON_HEADERS,
    status: 400,
  },
  { name: "logs with a negative after", method: "GET", path: "/v1/processes/proc_000000001/logs?after=-1", status: 400 },
  { name: "an unknown process", method: "POST", path: "/v1/processes/proc_999999999/stop", status: 404, code: "not_found" },
  // ---- agent info flags
  { name: "config=maybe", method: "GET", path: "/v1/agents/mock?config=maybe", status: 400 },
  // ---- skills
  ...[
    { type: "git", source: "ext::sh -c touch% /tmp/pwned" },
    { type: "git", source: "--upload-pack=touch /tmp/x" },
    { type: "git", source: "ssh://-oProxyCommand=id/x" },
    { type: "git", source: "ssh://user@-oProxyCommand=id/x" },
    { type: "git", source: "ssh://-oProxyCommand=id@host/x" },
    { type: "git", source: "-oProxyCommand=id@host:x" },
    { type: "git", source: "https://x/y.git", ref: "--output=/tmp/x" },
    { type: "git", source: "https://x/y.git", subpath: "%2e%2e/%2e%2e" },
    { type: "git", source: "https://x/y.git", subpath: "../secrets" },
    { type: "git", source: "https://x/y.git", subpath: "C:\\Windows" },
    { type: "git", source: "https://x/y.git", skills: ["a/b"] },
    { type: "git", source: "https://x/y.git", skills: ["-x"] },
    { type: "github", source: "owner/repo/../../x" },
    { type: "local", source: "/home/../etc" },
    { type: "local", source: "/tmp", ref: "main" },
    { type: "ftp", source: "x" },
  ].map(
    (source): Case => ({
      name: `skill source ${JSON.stringify(source)}`,
      method: "PUT",
      path: "/v1/config/skills",
      body: json({ sources: [source] }),
      headers: JSON_HEADERS,
      status: 400,
      code: "invalid_request",
    }),
  ),
  // ---- a bare `..` or `%2e%2e` segment is resolved by the URL itself (RFC 3986): it names another route
  { name: "a server id of '..'", method: "POST", path: "/v1/acp/..?agent=mock", body: init, headers: JSON_HEADERS, status: 404, code: "not_found" },
  { name: "a process id of '%2e%2e'", method: "GET", path: "/v1/processes/%2e%2e/logs", status: 404, code: "not_found" },
  // ---- routes and methods that do not exist
  { name: "an unknown route", method: "GET", path: "/v1/../../etc/passwd", status: 404 },
  { name: "a wrong method", method: "PATCH", path: "/v1/processes", status: 404 },
];

describe("hostile input", () => {
  it.each(cases)("$name → $status", async (c) => {
    const res = await rt.api(c.path, { method: c.method, ...(c.body !== undefined ? { body: c.body } : {}), ...(c.headers ? { headers: c.headers } : {}) });
    const text = await res.text();
    expect(res.status, text).toBe(c.status);
    if (c.status >= 400) {
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      const problem = JSON.parse(text) as { type: string; status: number; detail: string };
      expect(problem.status).toBe(c.status);
      expect(problem.detail.length).toBeGreaterThan(0);
      if (c.code) expect(errorCode(problem)).toBe(c.code);
    }
  });

  it("left the sidecar running and connected, and nothing ran that should not have", async () => {
    const sidecar = rt.sidecars.get("local")!;
    expect(sidecar.child.exitCode).toBeNull();
    const health = (await (await rt.api("/machines/local/v1/health")).json()) as { machine: { connected: boolean } };
    expect(health.machine.connected).toBe(true);
    const { processes } = (await (await rt.api("/v1/processes")).json()) as { processes: { command: string }[] };
    expect(processes.filter((p) => p.command === "npm" || p.command === "git")).toEqual([]);
    expect(sidecar.logs()).not.toMatch(/ error /);
  });
});
