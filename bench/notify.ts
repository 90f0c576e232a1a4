/**
 * What a person away waits for when an agent asks (docs/architecture.md, "Notifications" and "The
 * permission policy"), in `npm run bench` (alone: BENCH_ONLY=notify). The mock agent asks for a
 * permission; the clock starts when the request reaches a reader of the server's stream (the moment a
 * client could show it) and stops when the webhook and the Web Push request reach their receivers on
 * 127.0.0.1. Goals: webhook p50 ≤ 50 ms, push p50 ≤ 100 ms. Beside it, what a rule of the policy saves: a
 * turn whose request a rule answers, against the same turn answered by a client at once.
 */
import { createECDH, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newSecret, newVapidKeys, startSidecar, startWorker } from "../dev/runtime";

export interface NotifyFigures {
  asks: number;
  webhookP50Ms: number;
  webhookP90Ms: number;
  webPushP50Ms: number;
  webPushP90Ms: number;
  /** A turn whose permission request a rule of the policy answers (median). */
  policyTurnMs: number;
  /** The same turn, its request answered by the client as soon as its stream shows it (median). */
  clientTurnMs: number;
}

const ASKS = 20;
const TURNS = 20;

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

export async function benchNotify(): Promise<NotifyFigures> {
  const dir = await mkdtemp(join(tmpdir(), "bench-notify-"));
  const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts"), ...newVapidKeys() };
  const worker = await startWorker({ secrets, vars: { ACP_REGISTRY_URL: "http://127.0.0.1:9/no-registry.json" } });
  const sidecar = await startSidecar({ url: worker.url, machine: "local", tunnelSecret: secrets.TUNNEL_SECRET, dataDir: join(dir, "data"), workdir: dir });
  // The receiver of both: when each request arrived, by path.
  const arrivals: { path: string; atMs: number }[] = [];
  const receiver: Server = createServer((req, res) => {
    arrivals.push({ path: req.url ?? "", atMs: performance.now() });
    req.resume();
    req.on("end", () => {
      res.statusCode = 201;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${worker.url}${path.startsWith("/v1/acp") ? `/machines/local${path}` : path}`, {
      ...init,
      headers: { authorization: `Bearer ${secrets.API_TOKEN}`, "content-type": "application/json", ...init.headers },
    });
  let nextId = 1;
  const rpc = (server: string, method: string, params: unknown, query = "") =>
    api(`/v1/acp/${server}${query}`, {
      method: "POST",
      headers: { accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
    });
  try {
    await sidecar.connected();
    const phone = createECDH("prime256v1");
    phone.generateKeys();
    for (const body of [
      { kind: "webhook", url: `${target}/hook`, secret: "bench-0123456789abcdef", events: ["permission.requested"] },
      {
        kind: "webpush",
        subscription: { endpoint: `${target}/push`, keys: { p256dh: phone.getPublicKey().toString("base64url"), auth: randomBytes(16).toString("base64url") } },
        events: ["permission.requested"],
      },
    ]) {
      const made = await api("/v1/notifications/subscriptions", { method: "POST", body: JSON.stringify(body) });
      if (made.status !== 201) throw new Error(`subscription answered ${made.status}: ${await made.text()}`);
    }
    const rules = [{ match: { kinds: ["read"], outsideFolder: false }, decision: "allow" }];
    const put = await api("/v1/config/policy", { method: "PUT", body: JSON.stringify({ rules }) });
    const version = put.headers.get("etag");
    // The policy reaches the machine's object by the team's batched fan-out, not with the PUT: a turn the
    // rule must answer waits until the machine holds it (else it would ask a person, whom nobody plays here).
    const deadline = Date.now() + 30_000;
    for (;;) {
      const status = (await (await api("/v1/config/policy/status")).json()) as { machines: { machine: string; version: string | null }[] };
      if (status.machines.some((m) => m.machine === "local" && m.version === version)) break;
      if (Date.now() > deadline) throw new Error(`bench: the policy ${version} did not reach the machine in 30 s: ${JSON.stringify(status)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await rpc("bench", "initialize", { protocolVersion: 1, clientCapabilities: {} }, "?agent=mock");
    const opened = (await (await rpc("bench", "session/new", { cwd: dir, mcpServers: [] })).json()) as { result?: { sessionId: string } };
    if (!opened.result) throw new Error(`session/new: ${JSON.stringify(opened)}`);
    const sessionId = opened.result.sessionId;

    // The reader of the server's stream: when each permission request reached it, and its id.
    const seen: { id: number | string; atMs: number }[] = [];
    const reading = new AbortController();
    const stream = await api("/v1/acp/bench", { headers: { accept: "text/event-stream" }, signal: reading.signal });
    void (async () => {
      const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
          const data = /^data: (.*)$/m.exec(buffer.slice(0, cut))?.[1];
          buffer = buffer.slice(cut + 2);
          const message = data ? (JSON.parse(data) as { method?: string; id?: number | string }) : {};
          if (message.method === "session/request_permission" && message.id !== undefined) seen.push({ id: message.id, atMs: performance.now() });
        }
      }
    })().catch(() => undefined);
    const until = async (done: () => boolean) => {
      const deadline = Date.now() + 10_000;
      while (!done()) {
        if (Date.now() > deadline) throw new Error("bench: timed out waiting");
        await new Promise((r) => setTimeout(r, 2));
      }
    };
    const answer = (id: number | string) =>
      api("/v1/acp/bench", { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id, result: { outcome: { outcome: "selected", optionId: "allow" } } }) });

    // Asked of a person: the webhook and the push, timed from the reader's sight of the request.
    const hooks: number[] = [];
    const pushes: number[] = [];
    const clientTurns: number[] = [];
    for (let i = 0; i < ASKS; i++) {
      const before = { seen: seen.length, hooks: arrivals.filter((a) => a.path === "/hook").length, pushes: arrivals.filter((a) => a.path === "/push").length };
      const started = performance.now();
      const turn = rpc("bench", "session/prompt", { sessionId, prompt: [{ type: "text", text: "/permission edit notes.md" }] });
      await until(() => seen.length > before.seen);
      const asked = seen.at(-1)!;
      await answer(asked.id);
      await turn;
      clientTurns.push(performance.now() - started);
      await until(() => arrivals.filter((a) => a.path === "/hook").length > before.hooks && arrivals.filter((a) => a.path === "/push").length > before.pushes);
      hooks.push(arrivals.filter((a) => a.path === "/hook").at(-1)!.atMs - asked.atMs);
      pushes.push(arrivals.filter((a) => a.path === "/push").at(-1)!.atMs - asked.atMs);
    }
    // Answered by a rule: no reader sees the request, nobody is told, the turn goes on.
    const policyTurns: number[] = [];
    for (let i = 0; i < TURNS; i++) {
      const started = performance.now();
      await rpc("bench", "session/prompt", { sessionId, prompt: [{ type: "text", text: "/permission read notes.md" }] });
      policyTurns.push(performance.now() - started);
    }
    reading.abort();
    return {
      asks: ASKS,
      webhookP50Ms: percentile(hooks, 0.5),
      webhookP90Ms: percentile(hooks, 0.9),
      webPushP50Ms: percentile(pushes, 0.5),
      webPushP90Ms: percentile(pushes, 0.9),
      policyTurnMs: percentile(policyTurns, 0.5),
      clientTurnMs: percentile(clientTurns, 0.5),
    };
  } finally {
    receiver.close();
    await sidecar.stop();
    await worker.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

const fmt = (n: number) => (n < 10 ? n.toFixed(1) : Math.round(n).toString());

export function notifyReport(f: NotifyFigures): string {
  return [
    `A permission asked of a person (${f.asks} asks), from the moment a reader of the stream sees it:`,
    `  → the webhook received   p50 ${fmt(f.webhookP50Ms)} ms, p90 ${fmt(f.webhookP90Ms)} ms (goal p50 ≤ 50 ms)`,
    `  → the Web Push request   p50 ${fmt(f.webPushP50Ms)} ms, p90 ${fmt(f.webPushP90Ms)} ms (goal p50 ≤ 100 ms)`,
    `A turn with one permission request: answered by a rule ${fmt(f.policyTurnMs)} ms, by a client at once ${fmt(f.clientTurnMs)} ms (medians)`,
  ].join("\n");
}
