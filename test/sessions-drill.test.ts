/**
 * The sessions fault drill: 20 sessions on the mock (two per server), the sidecar killed outright in the
 * middle of their turns ten times in a row. Every session stays listed, every transcript holds each
 * prompt exactly once in order with nothing repeated or skipped, and every one answers afterwards on its
 * own server id and sessionId.
 */
import { afterAll, describe, expect, it } from "vitest";
import { rpc } from "./acp-helpers";
import { startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime | null = null;
afterAll(async () => {
  await rt?.dispose();
});

type Entry = { seq: number; kind: string; text?: string; data?: { stopReason?: string } };
type Session = { id: string; sessionId: string; serverId: string; state: string };

const SERVERS = 10;
const ROUNDS = 10;

describe("20 sessions, the sidecar killed mid-turn 10 times", () => {
  it("loses no session, no transcript entry and no resumability", { timeout: 240_000 }, async () => {
    rt = await startRuntime({ machines: ["local"], vars: { RECONNECT_GRACE_MS: "300" } });
    const runtime = rt;
    let nextId = 100;
    const post = (serverId: string, method: string, params: unknown, query = "") =>
      rpc(runtime, serverId, { jsonrpc: "2.0", id: nextId++, method, params }, query);

    const sessions: { serverId: string; sessionId: string }[] = [];
    for (let s = 0; s < SERVERS; s++) {
      const serverId = `drill-${s}`;
      expect((await post(serverId, "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock")).status).toBe(200);
      for (let k = 0; k < 2; k++) {
        const res = (await (await post(serverId, "session/new", { cwd: runtime.dir, mcpServers: [] })).json()) as { result: { sessionId: string } };
        sessions.push({ serverId, sessionId: res.result.sessionId });
      }
    }

    const statuses: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Every session starts a long turn; once each is streaming, the sidecar is killed outright.
      const turns = sessions.map((s) =>
        post(s.serverId, "session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: `/slow 200 20 round ${round}` }] }).then((r) => r.status),
      );
      await waitFor(
        async () => {
          const list = (await (await runtime.api("/v1/sessions?limit=200&state=running")).json()) as { sessions: Session[] };
          return list.sessions.length === sessions.length;
        },
        `round ${round}: every turn running`,
        30_000,
      );
      await runtime.sidecars.get("local")!.stop("SIGKILL");
      statuses.push(...(await Promise.all(turns)));
      await runtime.addSidecar("local");
    }
    // Each killed turn failed clearly (the machine went away), never hung or answered twice.
    expect(new Set(statuses)).toEqual(new Set([503]));

    // Every one is resumable: the same server id and sessionId answer a last turn.
    const finals = await Promise.all(
      sessions.map(async (s) => {
        const res = await post(s.serverId, "session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: "after the drill" }] });
        const text = await res.text();
        // Anything but a finished turn is shown whole, so that a failure says what came back.
        try {
          return (JSON.parse(text) as { result?: { stopReason: string } }).result?.stopReason ?? `${res.status} ${text}`;
        } catch {
          return `${res.status} ${text}`;
        }
      }),
    );
    expect(finals).toEqual(sessions.map(() => "end_turn"));

    const listed = (await (await runtime.api("/v1/sessions?limit=200")).json()) as { sessions: Session[] };
    expect(listed.sessions).toHaveLength(sessions.length);
    for (const s of sessions) {
      const record = listed.sessions.find((r) => r.serverId === s.serverId && r.sessionId === s.sessionId)!;
      expect(record.state).toBe("idle");
      const entries = ((await (await runtime.api(`/v1/sessions/${record.id}/transcript?limit=1000`)).json()) as { entries: Entry[] }).entries;
      // Numbered 1, 2, 3 … with nothing repeated or skipped.
      expect(entries.map((e) => e.seq)).toEqual(entries.map((_, i) => i + 1));
      const prompts = entries.filter((e) => e.kind === "prompt").map((e) => e.text);
      expect(prompts).toEqual([...Array.from({ length: ROUNDS }, (_, r) => `/slow 200 20 round ${r}`), "after the drill"]);
      // Each killed turn: its prompt, what streamed before the kill, then the error that ended it.
      for (let r = 0; r < ROUNDS; r++) {
        const at = entries.findIndex((e) => e.kind === "prompt" && e.text === `/slow 200 20 round ${r}`);
        const until = entries.findIndex((e, i) => i > at && e.kind === "prompt");
        const turn = entries.slice(at + 1, until);
        expect(turn.at(-1)!.kind).toBe("error");
        expect(turn.filter((e) => e.kind === "stop")).toEqual([]);
      }
      expect(entries.at(-1)).toMatchObject({ kind: "stop", data: { stopReason: "end_turn" } });
      expect(entries.at(-2)).toMatchObject({ kind: "text", text: "You said: after the drill" });
    }
  });
});
