/**
 * The least code this architecture can run (bench/README.md, "The floor of this architecture"): a worker
 * that hands a POST's body to a Durable Object, which sends it over a hibernatable WebSocket to a relay
 * process and answers with what comes back. No authentication, validation, audit or replay: whatever
 * the real worker costs above this is its own code, the rest is workerd, the hop and the socket.
 *
 * Files take the same path: `PUT /v1/fs/file?path=` hands the body to the object whole, which sends it as
 * one binary message (a header line, then the bytes) for the relay to write; `GET` asks for the file and
 * answers with the binary message that comes back. No pieces, limits or checks: a 1 MiB file's floor.
 */
import { DurableObject } from "cloudflare:workers";

interface FloorEnv {
  FLOOR: DurableObjectNamespace<FloorObject>;
}

type Answer = string | Uint8Array;

export class FloorObject extends DurableObject<FloorEnv> {
  private readonly waiting = new Map<string, (answer: Answer) => void>();
  private next = 0;

  override async fetch(): Promise<Response> {
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server);
    return new Response(null, { status: 101, webSocket: client });
  }

  private send(message: (id: string) => string | Uint8Array): Promise<Answer> {
    const socket = this.ctx.getWebSockets()[0];
    if (!socket) return Promise.resolve('{"error":"no relay connected"}');
    const id = String(++this.next);
    const answer = new Promise<Answer>((resolve) => this.waiting.set(id, resolve));
    socket.send(message(id));
    return answer;
  }

  relay(body: string): Promise<Answer> {
    return this.send((id) => `${id} ${body}`);
  }

  writeFile(path: string, bytes: Uint8Array): Promise<Answer> {
    return this.send((id) => {
      const header = new TextEncoder().encode(`${id} write ${path}\n`);
      const message = new Uint8Array(header.length + bytes.length);
      message.set(header);
      message.set(bytes, header.length);
      return message;
    });
  }

  readFile(path: string): Promise<Answer> {
    return this.send((id) => `${id} read ${path}`);
  }

  override webSocketMessage(_socket: WebSocket, message: string | ArrayBuffer): void {
    // Text: `<id> <answer>`; binary: `<id>\n<bytes>` (a file read).
    let id: string;
    let answer: Answer;
    if (typeof message === "string") {
      const space = message.indexOf(" ");
      id = message.slice(0, space);
      answer = message.slice(space + 1);
    } else {
      const bytes = new Uint8Array(message);
      const newline = bytes.indexOf(10);
      id = new TextDecoder().decode(bytes.subarray(0, newline));
      answer = bytes.subarray(newline + 1);
    }
    this.waiting.get(id)?.(answer);
    this.waiting.delete(id);
  }
}

export default {
  async fetch(request: Request, env: FloorEnv): Promise<Response> {
    const stub = env.FLOOR.get(env.FLOOR.idFromName("floor"));
    if (request.headers.get("upgrade") === "websocket") return stub.fetch(request);
    const url = new URL(request.url);
    if (url.pathname === "/v1/fs/file") {
      const path = url.searchParams.get("path") ?? "";
      if (request.method === "PUT") return new Response(await stub.writeFile(path, new Uint8Array(await request.arrayBuffer())));
      return new Response(await stub.readFile(path), { headers: { "content-type": "application/octet-stream" } });
    }
    const answer = await stub.relay(await request.text());
    return new Response(answer, { headers: { "content-type": "application/json" } });
  },
} satisfies ExportedHandler<FloorEnv>;
