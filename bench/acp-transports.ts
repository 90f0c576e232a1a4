/**
 * ACP's remote transport (`/acp`, docs/architecture.md "ACP's remote transport") through the ACP SDK's own
 * clients, in `npm run bench` (alone: BENCH_ONLY=acp). One connection each, initialized, then ROUND_TRIPS
 * requests one after another, each a round trip to the mock agent and back (a method it does not know:
 * it answers at once with an error, so the agent's own work is nothing). Goals: over the WebSocket, p50 ≤
 * 1.0× the relay's floor HTTP round trip (no per-message worker hop or authentication); over Streamable
 * HTTP, reported beside it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ClientConnection, client, methods } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import WebSocket from "ws";
import { newSecret, startSidecar, startWorker } from "../dev/runtime";
import { percentile } from "./proc";

export interface AcpTransportFigures {
  acpWebSocket: { rttP50Ms: number; rttP99Ms: number };
  acpHttp: { rttP50Ms: number; rttP99Ms: number };
}

const ROUND_TRIPS = 400;

async function roundTrips(conn: ClientConnection): Promise<{ rttP50Ms: number; rttP99Ms: number }> {
  await conn.agent.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const times: number[] = [];
  for (let i = 0; i < ROUND_TRIPS + 20; i++) {
    const started = performance.now();
    // The agent answers "method not found" at once: the round trip is the transport's alone.
    await conn.agent.request("_bench/ping" as never, {} as never).catch(() => undefined);
    if (i >= 20) times.push(performance.now() - started); // the first ones warm the path
  }
  return { rttP50Ms: percentile(times, 50), rttP99Ms: percentile(times, 99) };
}

export async function benchAcpTransports(): Promise<AcpTransportFigures> {
  const dir = await mkdtemp(join(tmpdir(), "bench-acp-"));
  const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts") };
  const worker = await startWorker({ secrets, vars: { ACP_REGISTRY_URL: "http://127.0.0.1:9/no-registry.json" } });
  const sidecar = await startSidecar({ url: worker.url, machine: "local", tunnelSecret: secrets.TUNNEL_SECRET, dataDir: join(dir, "data"), workdir: dir });
  const headers = { authorization: `Bearer ${secrets.API_TOKEN}` };
  try {
    await sidecar.connected();
    const overWs = client().connect(
      createWebSocketStream(`${worker.url.replace(/^http/, "ws")}/machines/local/acp?agent=mock`, { WebSocket: WebSocket as never, headers }),
    );
    const acpWebSocket = await roundTrips(overWs);
    const overHttp = client().connect(createHttpStream(`${worker.url}/machines/local/acp?agent=mock`, { headers }));
    const acpHttp = await roundTrips(overHttp);
    return { acpWebSocket, acpHttp };
  } finally {
    await sidecar.stop();
    await worker.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

const fmt = (n: number, digits = 3) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");

export function acpTransportReport(f: AcpTransportFigures, floorRttP50Ms: number | null): string {
  const ratio = (ms: number) => (floorRttP50Ms ? ` (${fmt(ms / floorRttP50Ms, 2)}× the floor's ${fmt(floorRttP50Ms)} ms HTTP round trip)` : "");
  const lines = [
    "ACP's remote transport through the ACP SDK's clients (a round trip to the agent and back):",
    `- WebSocket: p50 ${fmt(f.acpWebSocket.rttP50Ms)} ms, p99 ${fmt(f.acpWebSocket.rttP99Ms)} ms${ratio(f.acpWebSocket.rttP50Ms)}`,
    `- Streamable HTTP: p50 ${fmt(f.acpHttp.rttP50Ms)} ms, p99 ${fmt(f.acpHttp.rttP99Ms)} ms${ratio(f.acpHttp.rttP50Ms)}`,
  ];
  if (floorRttP50Ms) lines.push(`- ${f.acpWebSocket.rttP50Ms <= floorRttP50Ms ? "met" : "MISSED"}: over the WebSocket, p50 ≤ 1.0× the floor's HTTP round trip`);
  return lines.join("\n");
}
