/** Processes on the machine: everything the runtime started, and what a user starts (docs/api.md, "Every route"). */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { callerOf, machineStub, relay } from "../http/machine";
import { accepts } from "../http/negotiation";
import { terminalUpgrade } from "../durable/machine/object-requests";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { LastEventIdHeader, QueryFlag } from "../http/openapi";
import { opProblems, relayRoute, withRelayRoutes } from "../http/relay-route";
import { ProcessInput, ProcessConfigUpdate, ProcessLogs, ProcessRunRequest, SpawnRequest, TerminalSize } from "@agent-runtime/protocol/processes";
import { Identifier } from "@agent-runtime/protocol/values";

const IdParams = z.object({ id: Identifier });

/** Which of a process's log entries: from where, how many, which stream; or follow it live. */
const LogsQuery = z.object({
  follow: QueryFlag,
  since: z.coerce.number().int().min(0).optional().describe("only entries after this sequence number"),
  after: z.coerce.number().int().min(0).optional().describe("the same as since"),
  tail: z.coerce.number().int().min(0).max(100_000).optional().describe("only the last n entries (not with follow)"),
  stream: z.enum(["stdout", "stderr", "pty", "combined"]).optional().describe("only this stream (not with follow); default combined"),
});

const OwnerQuery = z.object({ owner: z.enum(["user", "system", "desktop"]).optional().describe("only the processes of this owner") });

const logs = apiRoute("get", "/processes/{id}/logs", {
  summary: "The process's output with sequence numbers (binary output as base64); follow=true streams SSE until the process exits",
  access: { role: "viewer", machine: true },
  request: { params: IdParams, query: LogsQuery, headers: LastEventIdHeader },
  answers: {
    200: {
      description: "the log entries, or with follow=true an SSE stream of `event: log` (a LogEntry, `id:` its sequence) and a final `event: end`",
      content: { "application/json": { schema: ProcessLogs }, "text/event-stream": { schema: z.string() } },
    },
  },
  problems: [...opProblems("processes.logs"), "not_acceptable"],
});

const terminal = apiRoute("get", "/processes/{id}/terminal/ws", {
  summary:
    "Attach a WebSocket to a running tty process: its output from the start as binary messages, then live; `ready`/`exit`/`error` JSON frames; send `input`/`resize`/`close` frames. Several viewers may attach at once. Browsers pass `?access_token=` (a ticket from POST /tickets).",
  access: { role: "member", machine: true },
  request: { params: IdParams },
  answers: { 101: { description: "switching protocols: the terminal is attached" } },
  problems: opProblems("processes.get"),
});

export const processRoutes = withRelayRoutes(new OpenAPIHono<AppEnv>(), [
  // Before /processes/{id}: "config" would otherwise be taken for a process id.
  relayRoute("get", "/processes/config", {
    summary: "The limits this machine enforces on processes",
    access: { role: "viewer", machine: true },
    op: "processes.config.get",
    answer: { status: 200, description: "the limits" },
  }),
  relayRoute("post", "/processes/config", {
    summary: "Change some of this machine's process limits (until its sidecar restarts)",
    access: { role: "member", machine: true },
    op: "processes.config.set",
    body: ProcessConfigUpdate,
    answer: { status: 200, description: "the limits now" },
  }),
  relayRoute("get", "/processes", {
    summary: "All processes the runtime tracks, running and exited, sorted by id",
    access: { role: "viewer", machine: true },
    op: "processes.list",
    query: OwnerQuery,
    // The machine lists them all: the owner is picked here.
    args: () => ({}),
    reply: ({ processes }, { query: { owner } }) => ({ processes: owner ? processes.filter((p) => p.owner === owner) : processes }),
    answer: { status: 200, description: "processes" },
  }),
  relayRoute("post", "/processes", {
    summary: "Start a process (no shell unless you run one)",
    access: { role: "member", machine: true },
    op: "processes.spawn",
    body: SpawnRequest,
    answer: { status: 201, description: "started" },
    errors: ["payload_too_large"],
  }),
  relayRoute("post", "/processes/run", {
    summary: "Run a command to its end (no shell) and answer with its exit code and output",
    access: { role: "member", machine: true },
    op: "processes.run",
    body: ProcessRunRequest,
    // The machine answers when the process ends, at the latest a little after its own deadline.
    timeoutMs: ({ json }) => (json.timeoutMs ?? 60_000) + 30_000,
    answer: { status: 200, description: "how it ended and what it wrote (each stream up to maxOutputBytes)" },
    errors: ["payload_too_large"],
  }),
  relayRoute("get", "/processes/{id}", {
    summary: "One process",
    access: { role: "viewer", machine: true },
    op: "processes.get",
    params: IdParams,
    answer: { status: 200, description: "the process" },
  }),
  relayRoute("post", "/processes/{id}/input", {
    summary: "Write to an interactive process's stdin",
    access: { role: "member", machine: true },
    op: "processes.input",
    params: IdParams,
    body: ProcessInput,
    args: ({ param: { id }, json: { data, encoding, eof } }) => ({ id, data, encoding: encoding ?? "base64", eof: eof ?? false }),
    answer: { status: 200, schema: z.object({ bytesWritten: z.number().int() }), description: "bytes written" },
  }),
  signal("stop", "SIGTERM", "SIGTERM; answers once the process has exited (or after 5 s)"),
  signal("kill", "SIGKILL", "SIGKILL"),
  relayRoute("post", "/processes/{id}/terminal/resize", {
    summary: "Set the size of a tty process's terminal",
    access: { role: "member", machine: true },
    op: "processes.resize",
    params: IdParams,
    body: TerminalSize,
    answer: { status: 200, description: "the terminal's size now" },
  }),
  relayRoute("delete", "/processes/{id}", {
    summary: "Forget an exited process (409 while it runs)",
    access: { role: "member", machine: true },
    op: "processes.delete",
    params: IdParams,
    answer: { status: 204, description: "forgotten" },
  }),
])
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
  });

/** Stop and kill: one operation, the signal named by the path. */
function signal(path: "stop" | "kill", signal: "SIGTERM" | "SIGKILL", summary: string) {
  return relayRoute("post", `/processes/{id}/${path}`, {
    summary,
    access: { role: "member", machine: true },
    op: "processes.signal",
    params: IdParams,
    args: ({ param: { id } }) => ({ id, signal }),
    answer: { status: 200, description: "the process after the signal took effect" },
  });
}
