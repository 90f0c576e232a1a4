/** Processes on the machine: everything the runtime started, and what a user starts (docs/api.md, "Every route"). */
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { declare } from "../http/access";
import { callerOf, machineStub, relay } from "../http/machine";
import { accepts } from "../http/negotiation";
import { terminalUpgrade } from "../durable/machine/object-requests";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { errors, json, LastEventIdHeader, jsonBody, MACHINE_ERRORS, QueryFlag } from "../http/openapi";
import {
  Process,
  ProcessInput,
  ProcessConfig,
  ProcessConfigUpdate,
  ProcessList,
  ProcessLogs,
  ProcessRunRequest,
  ProcessRunResponse,
  SpawnRequest,
  TerminalSize,
} from "@agent-runtime/protocol/processes";
import { Identifier } from "@agent-runtime/protocol/values";

const IdParams = z.object({ id: Identifier });

const OwnerQuery = z.object({ owner: z.enum(["user", "system", "desktop"]).optional().describe("only the processes of this owner") });

const getConfig = createRoute(
  declare(
    { role: "viewer", machine: true },
    {
      method: "get",
      path: "/processes/config",
      summary: "The limits this machine enforces on processes",
      responses: { 200: json(ProcessConfig, "the limits"), ...errors(...MACHINE_ERRORS) },
    },
  ),
);

const setConfig = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/processes/config",
      summary: "Change some of this machine's process limits (until its sidecar restarts)",
      request: { body: jsonBody(ProcessConfigUpdate) },
      responses: { 200: json(ProcessConfig, "the limits now"), ...errors(...MACHINE_ERRORS, "unsupported_media_type") },
    },
  ),
);

const list = createRoute(
  declare(
    { role: "viewer", machine: true },
    {
      method: "get",
      path: "/processes",
      summary: "All processes the runtime tracks, running and exited, sorted by id",
      request: { query: OwnerQuery },
      responses: { 200: json(ProcessList, "processes"), ...errors(...MACHINE_ERRORS) },
    },
  ),
);

const spawn = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/processes",
      summary: "Start a process (no shell unless you run one)",
      request: { body: jsonBody(SpawnRequest) },
      responses: {
        201: json(Process, "started"),
        ...errors(...MACHINE_ERRORS, "not_found", "too_many_processes", "unsupported_media_type", "payload_too_large"),
      },
    },
  ),
);

const run = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/processes/run",
      summary: "Run a command to its end (no shell) and answer with its exit code and output",
      request: { body: jsonBody(ProcessRunRequest) },
      responses: {
        200: json(ProcessRunResponse, "how it ended and what it wrote (each stream up to maxOutputBytes)"),
        ...errors(...MACHINE_ERRORS, "not_found", "too_many_processes", "unsupported_media_type", "payload_too_large"),
      },
    },
  ),
);

const get = createRoute(
  declare(
    { role: "viewer", machine: true },
    {
      method: "get",
      path: "/processes/{id}",
      summary: "One process",
      request: { params: IdParams },
      responses: { 200: json(Process, "the process"), ...errors(...MACHINE_ERRORS, "not_found") },
    },
  ),
);

const logs = createRoute(
  declare(
    { role: "viewer", machine: true },
    {
      method: "get",
      path: "/processes/{id}/logs",
      summary: "The process's output with sequence numbers (binary output as base64); follow=true streams SSE until the process exits",
      request: {
        params: IdParams,
        query: z.object({
          follow: QueryFlag,
          since: z.coerce.number().int().min(0).optional().describe("only entries after this sequence number"),
          after: z.coerce.number().int().min(0).optional().describe("the same as since"),
          tail: z.coerce.number().int().min(0).max(100_000).optional().describe("only the last n entries (not with follow)"),
          stream: z.enum(["stdout", "stderr", "pty", "combined"]).optional().describe("only this stream (not with follow); default combined"),
        }),
        headers: LastEventIdHeader,
      },
      responses: {
        200: {
          description: "the log entries, or with follow=true an SSE stream of `event: log` (a LogEntry, `id:` its sequence) and a final `event: end`",
          content: { "application/json": { schema: ProcessLogs }, "text/event-stream": { schema: z.string() } },
        },
        ...errors(...MACHINE_ERRORS, "not_found", "not_acceptable"),
      },
    },
  ),
);

const input = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/processes/{id}/input",
      summary: "Write to an interactive process's stdin",
      request: { params: IdParams, body: jsonBody(ProcessInput) },
      responses: { 200: json(z.object({ bytesWritten: z.number().int() }), "bytes written"), ...errors(...MACHINE_ERRORS, "not_found", "payload_too_large") },
    },
  ),
);

const signal = (path: "stop" | "kill", summary: string) =>
  createRoute(
    declare(
      { role: "member", machine: true },
      {
        method: "post",
        path: `/processes/{id}/${path}`,
        summary,
        request: { params: IdParams },
        responses: { 200: json(Process, "the process after the signal took effect"), ...errors(...MACHINE_ERRORS, "not_found") },
      },
    ),
  );

const resize = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "post",
      path: "/processes/{id}/terminal/resize",
      summary: "Set the size of a tty process's terminal",
      request: { params: IdParams, body: jsonBody(TerminalSize) },
      responses: { 200: json(TerminalSize, "the terminal's size now"), ...errors(...MACHINE_ERRORS, "not_found", "unsupported_media_type") },
    },
  ),
);

const terminal = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "get",
      path: "/processes/{id}/terminal/ws",
      summary:
        "Attach a WebSocket to a running tty process: its output from the start as binary messages, then live; `ready`/`exit`/`error` JSON frames; send `input`/`resize`/`close` frames. Several viewers may attach at once. Browsers pass `?access_token=` (a ticket from POST /tickets).",
      request: { params: IdParams },
      responses: {
        101: { description: "switching protocols: the terminal is attached" },
        ...errors(...MACHINE_ERRORS, "not_found"),
      },
    },
  ),
);

const remove = createRoute(
  declare(
    { role: "member", machine: true },
    {
      method: "delete",
      path: "/processes/{id}",
      summary: "Forget an exited process (409 while it runs)",
      request: { params: IdParams },
      responses: { 204: { description: "forgotten" }, ...errors(...MACHINE_ERRORS, "not_found") },
    },
  ),
);

export const processRoutes = new OpenAPIHono<AppEnv>()
  // Before /processes/{id}: "config" would otherwise be taken for a process id.
  .openapi(getConfig, async function readProcessLimits(c) {
    return c.json(await relay(c, "processes.config.get", {}), 200);
  })
  .openapi(setConfig, async function changeProcessLimits(c) {
    return c.json(await relay(c, "processes.config.set", c.req.valid("json")), 200);
  })
  .openapi(list, async function listProcesses(c) {
    const { owner } = c.req.valid("query");
    const { processes } = await relay(c, "processes.list", {});
    return c.json({ processes: owner ? processes.filter((p) => p.owner === owner) : processes }, 200);
  })
  .openapi(spawn, async function spawnProcess(c) {
    return c.json(await relay(c, "processes.spawn", c.req.valid("json")), 201);
  })
  .openapi(run, async function runProcess(c) {
    const request = c.req.valid("json");
    // The machine answers when the process ends, at the latest a little after its own deadline.
    return c.json(await relay(c, "processes.run", request, (request.timeoutMs ?? 60_000) + 30_000), 200);
  })
  .openapi(get, async function getProcess(c) {
    return c.json(await relay(c, "processes.get", { id: c.req.valid("param").id }), 200);
  })
  .openapi(logs, async function readLogs(c) {
    const { id } = c.req.valid("param");
    const { follow, since, after, tail, stream } = c.req.valid("query");
    const from = Number(c.req.valid("header")["last-event-id"] ?? since ?? after ?? 0);
    if (!follow || !accepts(c.req.header("accept"), "text/event-stream")) {
      return c.json(await relay(c, "processes.logs", { id, after: from, ...(tail !== undefined ? { tail } : {}), ...(stream ? { stream } : {}) }), 200);
    }
    const stub = machineStub(c);
    return await stub.openStream({ kind: "logs", processId: id }, from, callerOf(c));
  })
  .openapi(input, async function writeInput(c) {
    const { data, encoding, eof } = c.req.valid("json");
    return c.json(await relay(c, "processes.input", { id: c.req.valid("param").id, data, encoding: encoding ?? "base64", eof: eof ?? false }), 200);
  })
  .openapi(signal("stop", "SIGTERM; answers once the process has exited (or after 5 s)"), async function stopProcess(c) {
    return c.json(await relay(c, "processes.signal", { id: c.req.valid("param").id, signal: "SIGTERM" }), 200);
  })
  .openapi(signal("kill", "SIGKILL"), async function killProcess(c) {
    return c.json(await relay(c, "processes.signal", { id: c.req.valid("param").id, signal: "SIGKILL" }), 200);
  })
  .openapi(resize, async function resizeTerminal(c) {
    return c.json(await relay(c, "processes.resize", { id: c.req.valid("param").id, ...c.req.valid("json") }), 200);
  })
  .openapi(terminal, async function attachTerminal(c) {
    const { id } = c.req.valid("param");
    c.set("auditRead", true); // a terminal is the whole machine: who opened one is on record
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") throw new ProblemError("invalid_request", "this route takes a WebSocket upgrade");
    const process = await relay(c, "processes.get", { id });
    if (!process.tty)
      throw new ProblemError("conflict", `process '${id}' has no terminal (start it with tty: true); read its output from /processes/${id}/logs`);
    if (process.status !== "running") throw new ProblemError("conflict", `process '${id}' has exited; its output is at /processes/${id}/logs`);
    // The opener goes with the viewer: its token's revocation or expiry closes the terminal.
    return await machineStub(c).fetch(terminalUpgrade(id, callerOf(c)));
  })
  .openapi(remove, async function forgetProcess(c) {
    await relay(c, "processes.delete", { id: c.req.valid("param").id });
    return c.body(null, 204);
  });
