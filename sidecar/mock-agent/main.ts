/**
 * The `mock` agent: a real ACP agent process (stdio, JSON-RPC, built on @agentclientprotocol/sdk)
 * that needs no model and no credentials. Deterministic, so tests can assert on every byte.
 *
 * What a prompt does depends on its text:
 *   (anything else)        answers "You said: <text>" in chunks of MOCK_CHUNK_SIZE characters
 *   /permission [kind what]  a tool call that asks session/request_permission (hello.txt, or `read src/a.ts`,
 *                          `execute rm -rf ~`…), then reports the outcome
 *   /read <path>           reads a file through the client's fs/read_text_file and quotes it
 *   /stream <n> [bytes]    sends n agent_message_chunk updates of about `bytes` characters (benchmarks)
 *   /slow <n> <ms>         n chunks, one every ms milliseconds (cancel it with session/cancel)
 *   /exit <code>           exits the process with that code, mid-prompt
 *   /history               answers with the prompts this session had before this one (after a load too)
 *   /write <path> <text>   writes the rest of the prompt's first line and a newline as the file's whole content ({{folder}}: the session folder's name)
 *   /delete <path>         removes the file
 *   /scatter <n> <text>    writes src/module<i>/scattered.txt for i < n, each the text ({{folder}} as for /write)
 *   /serve <port>          starts an app on 127.0.0.1:<port> as its child (an agent's `npm run dev`), until it exits
 *   /elicit form|url       asks the person a question (elicitation/create), see questions.ts
 *   /title <text>          names the session (session_info_update)
 *   /sh <command line>     runs it with /bin/sh -c in the session's folder, without asking (an `execute` tool call)
 *   /fetch <url>           its own HTTP GET, through HTTP(S)_PROXY when set (a `fetch` tool call with the status or error)
 *     (both act on the disk directly, paths relative to the session's folder, and report an ACP tool call
 *     whose content is a `diff`, as agents that edit files do)
 *
 * Sessions are kept on disk as real agents keep theirs (one JSON file each under MOCK_AGENT_STATE_DIR,
 * default ~/.mock-agent/sessions), so a new process can `session/load` (replaying the history as
 * `session/update`s), `session/resume` (no replay) or `session/list` them. Ids are random: unique on
 * every machine. With MOCK_AGENT_NO_RESUME=1 the mock advertises neither load nor resume nor list.
 * Environment: MOCK_CHUNK_SIZE (default 8), MOCK_CHUNK_DELAY_MS (default 0). Every turn reports its usage
 * (questions.ts). `--require-login` is the `mock-login` agent (login.ts); `login` runs its terminal login.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { fetchTurn, type Report, shellTurn } from "./acting";
import { editTurn, scatter } from "./editing";
import {
  agent,
  methods,
  ndJsonStream,
  PROTOCOL_VERSION,
  RequestError,
  type AgentContext,
  type ContentBlock,
  type RequestPermissionResponse,
} from "@agentclientprotocol/sdk";
import { authenticate, BROWSER_METHOD, BROWSER_URL, keepCredentials, LOGIN_METHODS, loggedIn, logout, runLogin } from "./login";
import { elicit, reportUsage } from "./questions";
import { loadFromDisk, removeFromDisk, type Session, save, storedSessions } from "./session-store";

if (process.argv.includes("--version")) {
  process.stdout.write("mock-agent 1.0.0\n");
  process.exit(0);
}
const REQUIRE_LOGIN = process.argv.includes("--require-login");
if (process.argv.includes("login")) runLogin();

const CHUNK_SIZE = Math.max(1, Number(process.env.MOCK_CHUNK_SIZE ?? 8) || 8);
const CHUNK_DELAY_MS = Math.max(0, Number(process.env.MOCK_CHUNK_DELAY_MS ?? 0) || 0);

class Cancelled extends Error {}

const sessions = new Map<string, Session>();
const RESUMABLE = process.env.MOCK_AGENT_NO_RESUME !== "1";

/** A session this process knows, or one a previous process left on disk (after load or resume). */
function sessionOf(id: string): Session {
  const session = sessions.get(id);
  if (!session) throw new Error(`unknown session ${id}`);
  return session;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(new Cancelled());
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(new Cancelled());
      },
      { once: true },
    );
  });
}

function promptText(prompt: ContentBlock[]): string {
  return prompt
    .map((block) => (block.type === "text" ? block.text : block.type === "resource_link" ? block.uri : ""))
    .join("")
    .trim();
}

/** What the agent says in a turn is gathered for the session's history. */
const said = new Map<string, string>();
/** The id of the message the agent is saying in each session's turn (ACP's `messageId` on its chunks). */
const messageIds = new Map<string, string>();

async function say(client: AgentContext, sessionId: string, text: string): Promise<void> {
  said.set(sessionId, (said.get(sessionId) ?? "") + text);
  const messageId = messageIds.get(sessionId);
  await client.notify(methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text }, ...(messageId ? { messageId } : {}) },
  });
}

async function sayInChunks(client: AgentContext, sessionId: string, text: string, signal: AbortSignal, delayMs = CHUNK_DELAY_MS): Promise<void> {
  for (let i = 0; i < text.length; i += CHUNK_SIZE) {
    if (signal.aborted) throw new Cancelled();
    await say(client, sessionId, text.slice(i, i + CHUNK_SIZE));
    await sleep(delayMs, signal);
  }
}

/**
 * `/permission` asks to write hello.txt; `/permission <kind> <path or command>` asks for that tool call
 * instead (`read src/a.ts`, `edit /etc/hosts`, `execute rm -rf ~`), as agents ask, so a permission policy
 * can be tried on every kind of request. Nothing is done on the disk either way.
 */
async function permissionTurn(client: AgentContext, session: Session, signal: AbortSignal, args: string[]): Promise<void> {
  const toolCallId = `mock-tool-${randomUUID().slice(0, 8)}`;
  const [kind = "edit", ...target] = args;
  const what = target.join(" ");
  const toolKind = (["read", "edit", "delete", "execute", "fetch"] as const).find((k) => k === kind) ?? "other";
  const path = args.length === 0 ? `${session.cwd}/hello.txt` : resolve(session.cwd, what);
  const title = args.length === 0 ? "Write hello.txt" : toolKind === "execute" ? `Run ${what}` : `${kind} ${what}`;
  const toolCall = {
    toolCallId,
    title,
    kind: toolKind,
    status: "pending" as const,
    ...(toolKind === "execute" ? { rawInput: { command: what } } : { locations: [{ path }], rawInput: { file_path: path } }),
  };
  await client.notify(methods.client.session.update, { sessionId: session.id, update: { sessionUpdate: "tool_call", ...toolCall } });
  const answer: RequestPermissionResponse = await client.request(
    methods.client.session.requestPermission,
    {
      sessionId: session.id,
      toolCall,
      options: [
        { optionId: "allow", name: "Allow", kind: "allow_once" },
        { optionId: "reject", name: "Reject", kind: "reject_once" },
      ],
    },
    { cancellationSignal: signal, stopWaitingOnCancel: true },
  );
  if (signal.aborted || answer.outcome.outcome === "cancelled") throw new Cancelled();
  const allowed = answer.outcome.optionId === "allow";
  await client.notify(methods.client.session.update, {
    sessionId: session.id,
    update: { sessionUpdate: "tool_call_update", toolCallId, status: allowed ? "completed" : "failed" },
  });
  const done = args.length === 0 ? (allowed ? "wrote hello.txt" : "skipped hello.txt") : title;
  await say(client, session.id, allowed ? `Permission granted: ${done}` : `Permission denied: ${done}`);
}

async function runTurn(client: AgentContext, session: Session, text: string, signal: AbortSignal): Promise<void> {
  const [command, ...rest] = text.split(/\s+/);
  switch (command) {
    case "/write":
    case "/delete":
      return say(client, session.id, await editTurn(client, session, text));
    case "/scatter":
      return say(client, session.id, scatter(session, rest));
    case "/permission":
      return permissionTurn(client, session, signal, rest);
    case "/title":
      await client.notify(methods.client.session.update, { sessionId: session.id, update: { sessionUpdate: "session_info_update", title: rest.join(" ") } });
      return say(client, session.id, "Titled");
    case "/elicit":
      return say(client, session.id, await elicit(client, session.id, rest[0] ?? "form", signal));
    case "/read": {
      const path = rest.join(" ");
      const file = await client.request(
        methods.client.fs.readTextFile,
        { sessionId: session.id, path },
        { cancellationSignal: signal, stopWaitingOnCancel: true },
      );
      return say(client, session.id, `Read ${path}: ${file.content}`);
    }
    case "/stream": {
      const count = Math.max(0, Number(rest[0] ?? 10) || 0);
      const size = Math.max(1, Number(rest[1] ?? 200) || 200);
      const filler = "x".repeat(size);
      for (let i = 0; i < count; i++) {
        if (signal.aborted) throw new Cancelled();
        await say(client, session.id, filler);
      }
      return;
    }
    case "/slow": {
      const count = Math.max(0, Number(rest[0] ?? 10) || 0);
      const ms = Math.max(0, Number(rest[1] ?? 100) || 0);
      for (let i = 0; i < count; i++) {
        await say(client, session.id, `tick ${i + 1} `);
        await sleep(ms, signal);
      }
      return;
    }
    case "/fail":
      // As a real agent fails: the cause on stderr (here with a secret from its environment), a bare error on the wire.
      process.stderr.write(`mock agent: cannot finish the turn: the model endpoint refused the key ${process.env.MOCK_AGENT_API_KEY ?? "(none)"}\n`);
      throw new Error("Internal error");
    case "/exit":
      process.exit(Number(rest[0] ?? 1) || 0);
      return;
    case "/serve": {
      // A child of this process, as an agent's dev server is: the runtime names its port after the session.
      const port = Number(rest[0]);
      const app = `require("node:http").createServer((q, s) => s.end("served by the mock agent's app")).listen(${port}, "127.0.0.1")`;
      const child = spawn(process.execPath, ["-e", app], { stdio: "ignore" });
      process.once("exit", () => child.kill());
      return say(client, session.id, `Serving on :${port}`);
    }
    case "/sh":
    case "/fetch": {
      const report: Report = {
        // The mock's own update shapes (tool calls, text) stand for the SDK's union, which it does not name one by one.
        update: (update) => client.notify(methods.client.session.update, { sessionId: session.id, update: update as never }),
        say: (said) => say(client, session.id, said),
      };
      return command === "/sh" ? shellTurn(report, session.cwd, text.slice("/sh".length).trim(), signal) : fetchTurn(report, rest[0] ?? "");
    }
    case "/history": {
      const prompts = session.history.filter((h) => h.role === "user").map((h) => h.text);
      return say(client, session.id, `History (${prompts.length}): ${prompts.join(" | ")}`);
    }
    default:
      return sayInChunks(client, session.id, `You said: ${text}`, signal);
  }
}

const AUTH_VAR = process.env.MOCK_AGENT_AUTH_VAR;
let authenticated = false;

const app = agent({ name: "mock" })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: RESUMABLE,
      promptCapabilities: { image: false, audio: false, embeddedContext: false },
      sessionCapabilities: RESUMABLE ? { resume: {}, list: {}, close: {}, delete: {} } : { close: {} },
      auth: REQUIRE_LOGIN ? { logout: {} } : {},
    },
    agentInfo: { name: "mock", title: "Mock agent", version: "1.0.0" },
    // With MOCK_AGENT_AUTH_VAR set, the mock asks for a login that variable satisfies (as codex-acp offers
    // "Use OPENAI_API_KEY"), and refuses sessions until it happened.
    authMethods: REQUIRE_LOGIN ? LOGIN_METHODS : AUTH_VAR ? [{ type: "env_var", id: "mock-api-key", name: `Use ${AUTH_VAR}`, vars: [{ name: AUTH_VAR }] }] : [],
  }))
  .onRequest(methods.agent.authenticate, async ({ params, client }) => {
    if (REQUIRE_LOGIN && params.methodId === BROWSER_METHOD) {
      // Its own flow: a page to open, asked of the person during this request (there is no session yet).
      const answer = await client.request(methods.client.elicitation.create, {
        requestId: client.requestId ?? null,
        mode: "url",
        elicitationId: `mock-login-${randomUUID().slice(0, 8)}`,
        url: BROWSER_URL,
        message: "Open this page to log the mock in",
      });
      if (answer.action !== "accept") throw new Error(`the login page was ${answer.action === "decline" ? "declined" : "cancelled"}`);
      keepCredentials();
      return {};
    }
    if (REQUIRE_LOGIN && authenticate(params.methodId)) return {};
    if (params.methodId !== "mock-api-key" || !AUTH_VAR || !process.env[AUTH_VAR]) throw new Error(`cannot log in with ${params.methodId}`);
    authenticated = true;
    return {};
  })
  .onRequest(methods.agent.logout, () => {
    logout();
    return {};
  })
  .onRequest(methods.agent.session.new, ({ params }) => {
    // MOCK_AGENT_REFUSE_AT=prompt: it starts sessions and refuses the turn instead, as Claude Code's adapter does.
    if (REQUIRE_LOGIN && !loggedIn() && process.env.MOCK_AGENT_REFUSE_AT !== "prompt") throw RequestError.authRequired();
    if (AUTH_VAR && !authenticated) throw new Error("Authentication required");
    const id = `mock-${randomUUID()}`;
    const session: Session = { id, cwd: params.cwd, turn: null, history: [], title: null, updatedAt: new Date().toISOString() };
    sessions.set(id, session);
    save(session);
    // Which MCP servers the session was given, so tests can see what the relay added for a folder.
    if (params.mcpServers.length === 0) return { sessionId: id };
    return { sessionId: id, _meta: { mcpServers: params.mcpServers.map((server) => server.name) } };
  })
  .onRequest(methods.agent.session.load, async ({ params, client }) => {
    if (!RESUMABLE) throw new Error("this mock does not load sessions");
    const session = loadFromDisk(params.sessionId);
    if (!session) throw new Error(`unknown session ${params.sessionId}`);
    session.cwd = params.cwd;
    sessions.set(session.id, session);
    // As real agents do: the whole conversation again, as updates, before the answer.
    for (const entry of session.history) {
      await client.notify(methods.client.session.update, {
        sessionId: session.id,
        update: { sessionUpdate: entry.role === "user" ? "user_message_chunk" : "agent_message_chunk", content: { type: "text", text: entry.text } },
      });
    }
    return { _meta: { replayed: session.history.length } };
  })
  .onRequest(methods.agent.session.resume, ({ params }) => {
    if (!RESUMABLE) throw new Error("this mock does not resume sessions");
    const session = sessions.get(params.sessionId) ?? loadFromDisk(params.sessionId);
    if (!session) throw new Error(`unknown session ${params.sessionId}`);
    session.cwd = params.cwd;
    sessions.set(session.id, session);
    return { _meta: { resumed: session.history.length } };
  })
  .onRequest(methods.agent.session.list, ({ params }) => {
    if (!RESUMABLE) throw new Error("this mock does not list sessions");
    const found = storedSessions()
      .filter((s) => !params.cwd || s.cwd === params.cwd)
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
    return { sessions: found.map((s) => ({ sessionId: s.id, cwd: s.cwd, title: s.title, updatedAt: s.updatedAt })) };
  })
  .onRequest(methods.agent.session.delete, ({ params }) => {
    sessions.get(params.sessionId)?.turn?.abort();
    sessions.delete(params.sessionId);
    removeFromDisk(params.sessionId);
    return {};
  })
  .onRequest(methods.agent.session.close, ({ params }) => {
    sessions.get(params.sessionId)?.turn?.abort();
    sessions.delete(params.sessionId);
    return {};
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client, signal }) => {
    if (REQUIRE_LOGIN && !loggedIn()) throw RequestError.authRequired();
    const session = sessionOf(params.sessionId);
    session.turn?.abort();
    const turn = new AbortController();
    session.turn = turn;
    // The client's `$/cancel_request` for this prompt cancels the turn as `session/cancel` does.
    signal.addEventListener("abort", () => turn.abort(), { once: true });
    const text = promptText(params.prompt);
    said.delete(session.id);
    messageIds.set(session.id, `msg-${randomUUID()}`);
    const bill = { tokens: session.tokens ?? 0 };
    const usage = async () => {
      const turn = await reportUsage(client, session.id, bill, text, said.get(session.id) ?? "");
      session.tokens = bill.tokens;
      return turn;
    };
    try {
      await runTurn(client, session, text, turn.signal);
      return { stopReason: "end_turn" as const, usage: await usage() };
    } catch (err) {
      if (turn.signal.aborted || err instanceof Cancelled) return { stopReason: "cancelled" as const, usage: await usage() };
      throw err;
    } finally {
      if (session.turn === turn) session.turn = null;
      // The turn is history now, whatever its end (a cancelled turn was still asked).
      session.history.push({ role: "user", text });
      const answer = said.get(session.id);
      if (answer) session.history.push({ role: "agent", text: answer });
      said.delete(session.id);
      session.title ??= text.slice(0, 80);
      session.updatedAt = new Date().toISOString();
      save(session);
    }
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.turn?.abort();
  });

const connection = app.connect(
  // Node's web streams typed as the DOM's the ACP SDK takes: the same objects, two typings.
  ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>),
);
void connection.closed.then(() => process.exit(0));
