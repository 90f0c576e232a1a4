import type { Runtime } from "./harness";

/** Start a mock agent's ACP server (`initialize`, `session/new`) and answer its session id. */
export async function openSession(rt: Runtime, serverId: string): Promise<string> {
  const init = await rpc(rt, serverId, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
  if (init.status !== 200) throw new Error(`initialize answered ${init.status}: ${await init.text()}`);
  const res = await rpc(rt, serverId, { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: rt.dir, mcpServers: [] } });
  return ((await res.json()) as { result: { sessionId: string } }).result.sessionId;
}

/** POST one JSON-RPC message to an ACP server with plain fetch. */
export function rpc(rt: Runtime, serverId: string, message: unknown, query = "", headers: Record<string, string> = {}): Promise<Response> {
  return rt.api(`/v1/acp/${serverId}${query}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...headers },
    body: JSON.stringify(message),
  });
}

export interface SseEvent {
  event: string;
  id: number | null;
  data: unknown;
}

/** Read an ACP server's SSE stream until a condition holds (or the stream ends), then close it. */
export async function readSse(
  rt: Runtime,
  serverId: string,
  opts: {
    lastEventId?: number;
    until?: (events: SseEvent[]) => boolean;
    untilEnd?: boolean;
    timeoutMs?: number;
    path?: string;
    /** Called once the stream is open (the reader is attached: what happens from now on reaches it). */
    opened?: () => void;
  } = {},
): Promise<SseEvent[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), opts.timeoutMs ?? 15_000);
  const headers: Record<string, string> = { accept: "text/event-stream" };
  if (opts.lastEventId !== undefined) headers["last-event-id"] = String(opts.lastEventId);
  const res = await rt.api(opts.path ?? `/v1/acp/${serverId}`, { headers, signal: controller.signal });
  if (res.status !== 200) throw new Error(`SSE answered ${res.status}: ${await res.text()}`);
  opts.opened?.();
  const events: SseEvent[] = [];
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const parsed = parseBlock(block);
        if (parsed) events.push(parsed);
      }
      if (opts.until?.(events)) break;
      if (opts.untilEnd && events.at(-1)?.event === "end") break;
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
    throw new Error(`SSE timed out with ${events.length} events: ${JSON.stringify(events.slice(-3))}`);
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return events;
}

function parseBlock(block: string): SseEvent | null {
  let event = "message";
  let id: number | null = null;
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("id:")) id = Number(line.slice(3).trim());
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  if (data.length === 0) return null;
  return { event, id, data: JSON.parse(data.join("\n")) as unknown };
}

/** Wait until an ACP server's agent has streamed at least this many messages (an observable point in a turn). */
export async function streamed(rt: Runtime, serverId: string, count: number): Promise<void> {
  await readSse(rt, serverId, { until: (events) => events.filter((e) => e.event === "message").length >= count });
}
