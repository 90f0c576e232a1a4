/**
 * `GET /v1/sessions/events` through the worker and the machine's object, with a fake sidecar: the machines
 * watched, a session's state change said as it happens, the machine's coming and going.
 */
import { SELF, env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { FakeSidecar } from "../../../test/workers/fake-sidecar";

const sidecars: FakeSidecar[] = [];

afterEach(() => {
  for (const sidecar of sidecars.splice(0)) if (!sidecar.closed) sidecar.drop();
});

function api(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${env.API_TOKEN}`);
  return SELF.fetch(`https://runtime.test${path}`, { ...init, headers });
}

/** Reads a stream until `text` has arrived; what came before it included. */
async function readUntil(reader: ReadableStreamDefaultReader<string>, seen: { text: string }, text: string): Promise<void> {
  while (!seen.text.includes(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before '${text}': ${seen.text}`);
    seen.text += value;
  }
}

async function startSession(sidecar: FakeSidecar, machine: string): Promise<string> {
  const post = (body: unknown, query = "") =>
    api(`/machines/${machine}/v1/acp/s1${query}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
  const initializing = post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
  sidecar.answer(await sidecar.call("acp.post"), {
    status: 200,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, result: { protocolVersion: 1, agentCapabilities: {} } }),
  });
  await initializing;
  const starting = post({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: "/home/me/project", mcpServers: [] } });
  sidecar.answer(await sidecar.call("acp.post"), { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 2, result: { sessionId: "acp-1" } }) });
  await starting;
  const listed = (await (await api(`/machines/${machine}/v1/sessions`)).json()) as { sessions: { id: string }[] };
  return listed.sessions[0]!.id;
}

describe("the sessions' changes, live", () => {
  it("tells a caller with no machine that has sessions to come back later, and refuses a machine it does not know", async () => {
    const empty = await api("/v1/sessions/events", { headers: { accept: "text/event-stream" } });
    expect([empty.status, await empty.text()]).toEqual([200, "retry: 30000\n\n"]);
    const unknown = await api("/machines/quiet/v1/sessions/events", { headers: { accept: "text/event-stream" } });
    expect(unknown.status).toBe(404);
  });

  it("says when a session's state changes and when its machine goes", async () => {
    const sidecar = await FakeSidecar.connect("watched");
    sidecars.push(sidecar);
    const id = await startSession(sidecar, "watched");
    const res = await api("/machines/watched/v1/sessions/events", { headers: { accept: "text/event-stream" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    const seen = { text: "" };
    await readUntil(reader, seen, 'event: machine\ndata: {"machine":"watched"}');
    // A prompt reaches the agent: the session runs, and the stream says so before the turn ends.
    const prompting = api("/machines/watched/v1/acp/s1", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId: "acp-1", prompt: [{ type: "text", text: "hi" }] } }),
    });
    const prompt = await sidecar.call("acp.post");
    await readUntil(reader, seen, `event: session\ndata: ${JSON.stringify({ id, machine: "watched", state: "running" })}`);
    sidecar.answer(prompt, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 3, result: { stopReason: "end_turn" } }) });
    await prompting;
    await readUntil(reader, seen, `event: session\ndata: ${JSON.stringify({ id, machine: "watched", state: "idle" })}`);
    // The machine goes: a new `machine` event, after the turn's end.
    const afterIdle = { text: seen.text.slice(seen.text.lastIndexOf('"state":"idle"')) };
    expect(afterIdle.text).not.toContain("event: machine");
    sidecar.drop();
    await readUntil(reader, afterIdle, 'event: machine\ndata: {"machine":"watched"}');
    await reader.cancel();
  });
});
