/**
 * The least code this architecture can run (bench/README.md, "The floor of this architecture"): a worker
 * that hands a POST's body to a Durable Object, which sends it over a hibernatable WebSocket to a relay
 * process and answers with what comes back. No authentication, validation, audit or replay: whatever
 * the real worker costs above this is its own code, the rest is workerd, the hop and the socket.
 */
import { DurableObject } from "cloudflare:workers";

interface FloorEnv {
  FLOOR: DurableObjectNamespace<FloorObject>;
}

export class FloorObject extends DurableObject<FloorEnv> {
  private readonly waiting = new Map<string, (body: string) => void>();
  private next = 0;

  override async fetch(): Promise<Response> {
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server);
    return new Response(null, { status: 101, webSocket: client });
  }

  relay(body: string): Promise<string> {
    const socket = this.ctx.getWebSockets()[0];
    if (!socket) return Promise.resolve('{"error":"no relay connected"}');
    const id = String(++this.next);
    const answer = new Promise<string>((resolve) => this.waiting.set(id, resolve));
    socket.send(`${id} ${body}`);
    return answer;
  }

  override webSocketMessage(_socket: WebSocket, message: string | ArrayBuffer): void {
    const text = typeof message === "string" ? message : new TextDecoder().decode(message);
    const space = text.indexOf(" ");
    const id = text.slice(0, space);
    this.waiting.get(id)?.(text.slice(space + 1));
    this.waiting.delete(id);
  }
}

export default {
  async fetch(request: Request, env: FloorEnv): Promise<Response> {
    const stub = env.FLOOR.get(env.FLOOR.idFromName("floor"));
    if (request.headers.get("upgrade") === "websocket") return stub.fetch(request);
    const answer = await stub.relay(await request.text());
    return new Response(answer, { headers: { "content-type": "application/json" } });
  },
} satisfies ExportedHandler<FloorEnv>;
