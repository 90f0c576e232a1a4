/**
 * Prompts wait for their machine (docs/architecture.md, "Sessions"): sent at once when it is there;
 * queued while it is away, shown in the record and the transcript, and run once each, in order, when it
 * comes back; a cancelled one never runs. A follower of the transcript hears the machine go and come back.
 */
import { afterEach, expect, it } from "vitest";
import { readSse, rpc } from "./acp-helpers";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime;
afterEach(async () => {
  await rt?.dispose();
});

type Entry = { seq: number; kind: string; text?: string };
type Record = { id: string; state: string; queued: { id: string; text: string; by: string }[] };

const prompt = (id: string, text: string) =>
  rt.api(`/v1/sessions/${id}/prompt`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: [{ type: "text", text }] }),
  });
const record = async (id: string) => (await (await rt.api(`/v1/sessions/${id}`)).json()) as Record;
const entries = async (id: string) => ((await (await rt.api(`/v1/sessions/${id}/transcript`)).json()) as { entries: Entry[] }).entries;

it("sends a prompt at once, queues them while the machine is away, and runs each once, in order, when it is back", async () => {
  rt = await startRuntime({ machines: ["local"], vars: { RECONNECT_GRACE_MS: "1000" } });
  await rpc(rt, "queue", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
  const created = (await (await rpc(rt, "queue", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).json()) as {
    result: { sessionId: string };
  };
  const { id } = await waitFor(async () => {
    const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
    return sessions.find((s) => s.sessionId === created.result.sessionId);
  }, "the record");

  const sent = await prompt(id, "right away");
  expect(sent.status).toBe(202);
  expect(await sent.json()).toMatchObject({ state: "sent" });
  await waitFor(async () => (await entries(id)).some((e) => e.kind === "stop"), "the first turn to end");

  // The machine goes: a follower of the transcript hears it.
  let attached: () => void = () => {};
  const following = new Promise<void>((resolve) => {
    attached = resolve;
  });
  const heard = readSse(rt, "", {
    path: `/v1/sessions/${id}/transcript?after=100`,
    until: (events) => events.some((e) => e.event === "session" && (e.data as Record).state === "offline"),
    opened: () => attached(),
  });
  await following;
  await rt.sidecars.get("local")!.stop("SIGKILL");
  await heard;

  const first = (await (await prompt(id, "/history")).json()) as { id: string; state: string };
  const second = (await (await prompt(id, "after the history")).json()) as { id: string; state: string };
  const third = (await (await prompt(id, "never sent")).json()) as { id: string; state: string };
  expect([first.state, second.state, third.state]).toEqual(["queued", "queued", "queued"]);
  const cancelled = await rt.api(`/v1/sessions/${id}/queue/${third.id}`, { method: "DELETE" });
  expect(await cancelled.json()).toEqual({ id: third.id, state: "cancelled" });
  const again = await rt.api(`/v1/sessions/${id}/queue/${third.id}`, { method: "DELETE" });
  expect(again.status).toBe(409);
  expect(errorCode(await problemOf(again))).toBe("conflict");
  expect((await record(id)).queued.map((q) => q.text)).toEqual(["/history", "after the history"]);
  expect((await entries(id)).filter((e) => e.kind === "notice").map((e) => e.text)).toEqual([
    "Queued until local is back: /history",
    "Queued until local is back: after the history",
    "Queued until local is back: never sent",
    "A queued prompt was cancelled.",
  ]);

  await rt.addSidecar("local");
  await waitFor(
    async () => (await entries(id)).filter((e) => e.kind === "stop").length === 3 && (await record(id)).queued.length === 0,
    "both queued turns",
    20_000,
  );
  const after = await entries(id);
  expect(after.filter((e) => e.kind === "prompt").map((e) => e.text)).toEqual(["right away", "/history", "after the history"]);
  // The agent came back with the session reattached: the queued /history saw the turn before the outage.
  expect(after.find((e) => e.kind === "text" && e.text?.startsWith("History"))?.text).toBe("History (1): right away");
  expect(after.some((e) => e.text === "never sent")).toBe(false);
  expect((await record(id)).state).toBe("idle");
});

it("tells a reader of a restored agent's stream the gap once, not in a loop that holds every other message back", async () => {
  rt = await startRuntime({ machines: ["local"] });
  await rpc(rt, "restored", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
  const created = (await (await rpc(rt, "restored", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).json()) as {
    result: { sessionId: string };
  };
  await rpc(rt, "restored", {
    jsonrpc: "2.0",
    id: 3,
    method: "session/prompt",
    params: { sessionId: created.result.sessionId, prompt: [{ type: "text", text: "before" }] },
  });
  const { id } = await waitFor(async () => {
    const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
    return sessions.find((s) => s.sessionId === created.result.sessionId);
  }, "the record");
  await rt.sidecars.get("local")!.stop("SIGKILL");
  await waitFor(async () => (await record(id)).state === "offline", "the session to read offline");
  await rt.addSidecar("local");
  // As the dashboard does when it sends: it reads the agent's stream from its start, and prompts.
  const read = readSse(rt, "restored", { until: (events) => events.some((e) => JSON.stringify(e.data).includes(": after")) });
  expect((await prompt(id, "after")).status).toBe(202);
  const events = await read;
  // Messages 1 to 3 (two chunks and the turn's usage_update) were the agent's before it was restored: said once, then the reply.
  expect(events.filter((e) => e.event === "error").map((e) => (e.data as { dropped?: unknown }).dropped)).toEqual([{ from: 1, to: 3 }]);
});

it("refuses a prompt for a closed or unknown session, and one that is neither text nor content blocks", async () => {
  rt = await startRuntime({ machines: ["local"] });
  const unknown = await prompt("ses-0123456789abcdef-local", "hello");
  expect(unknown.status).toBe(404);
  for (const wrong of [42, "", [], { type: "text", text: "not in a list" }]) {
    const bad = await rt.api("/v1/sessions/ses-0123456789abcdef-local/prompt", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: wrong }),
    });
    expect(bad.status, JSON.stringify(wrong)).toBe(400);
  }
});

it("takes a prompt as plain text, as a task does: the agent gets it as one text block", async () => {
  rt = await startRuntime({ machines: ["local"] });
  await rpc(rt, "text", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
  const created = (await (await rpc(rt, "text", { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } })).json()) as {
    result: { sessionId: string };
  };
  const { id } = await waitFor(async () => {
    const { sessions } = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; sessionId: string }[] };
    return sessions.find((s) => s.sessionId === created.result.sessionId);
  }, "the record");
  const sent = await rt.api(`/v1/sessions/${id}/prompt`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: "plain words" }),
  });
  expect(sent.status).toBe(202);
  expect(await sent.json()).toMatchObject({ state: "sent" });
  await waitFor(async () => (await entries(id)).some((e) => e.kind === "text" && String(e.text).includes("You said: plain words")), "the answer");
});
