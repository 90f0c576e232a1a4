/**
 * The worker's end of previews (docs/architecture.md, "Streams in the tunnel"): a proxied HTTP request or
 * WebSocket handed to the machine's object becomes one stream of preview frames to the sidecar.
 *  - HTTP: the request body is read in pieces and sent only while the sidecar's credit lasts; the response
 *    body is a ReadableStream whose queue holds at most one window, credit going back as the browser reads
 *    it. Neither body is ever whole in memory, and a slow reader holds only its own stream back.
 *  - WebSocket: answered once the app accepted it (its subprotocol chosen), then a hibernatable socket of
 *    this object whose tag names the stream, so messages find it after the object slept.
 * A dropped tunnel or a restarted sidecar ends every preview at once: a proxied request cannot resume.
 */
import { z } from "zod";
import type { SidecarFrame, WorkerFrame } from "@agent-runtime/protocol/frames";
import {
  PREVIEW_MESSAGE_MAX_BYTES,
  PREVIEW_WINDOW_BYTES,
  type PreviewCredit,
  type PreviewData,
  type PreviewHead,
  type PreviewOffer,
} from "@agent-runtime/protocol/preview";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import { problemResponse } from "../../lib/problem-response";
import { closeQuietly } from "../../lib/close-reason";
import { offline } from "../machine/tunnel";
import { sendBody } from "./request-body";

export const PREVIEW_TAG = "preview";

const SocketAttachment = z.object({ kind: z.literal("preview"), sid: z.string() });

/** The stream a preview socket belongs to; null for any other socket. */
export function previewSocketOf(ws: WebSocket): string | null {
  const parsed = SocketAttachment.safeParse(ws.deserializeAttachment());
  return parsed.success ? parsed.data.sid : null;
}

const sidTag = (sid: string) => `pv:${sid}`;

export interface PreviewHost {
  send(frame: WorkerFrame): void;
  /** What the live sidecar's hello said of previews; null when it offers none; undefined when no sidecar is there. */
  offer(): PreviewOffer | null | undefined;
  newId(): string;
  accept(ws: WebSocket, tags: string[]): void;
  sockets(tag: string): WebSocket[];
}

type Closing = Extract<SidecarFrame, { t: "px" }>;
type FromSidecar = PreviewHead | PreviewData | PreviewCredit | Closing;

/** What a stream waits for: its head (then a Response), then its body's pieces. */
interface Open {
  head(frame: PreviewHead): void;
  data(frame: PreviewData): void;
  credit(n: number): void;
  close(frame: Closing): void;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export class PreviewStreams {
  private readonly open = new Map<string, Open>();

  constructor(private readonly host: PreviewHost) {}

  /** A request for `port` at `path` (headers already chosen by the route): the app's response, or a problem. */
  async request(request: Request, port: number, path: string, socketTags: string[]): Promise<Response> {
    const offer = this.host.offer();
    if (offer === undefined) return problemResponse(offline());
    if (offer === null)
      return problemResponse({
        code: "sidecar_outdated",
        detail: "this machine's sidecar does not serve previews: upgrade the sidecar (npm i -g agent-runtime-sidecar) and restart it",
      });
    const sid = this.host.newId();
    const upgrade = request.headers.get("upgrade")?.toLowerCase() === "websocket";
    const headers = [...request.headers].filter(([name]) => name !== "upgrade" && !name.startsWith("sec-websocket-"));
    const protocols = upgrade
      ? (request.headers.get("sec-websocket-protocol") ?? "")
          .split(",")
          .map((p) => p.trim())
          .filter(Boolean)
      : undefined;
    const body = !upgrade && request.body !== null;
    const answer = new Promise<Response>((resolve) => {
      this.open.set(sid, upgrade ? this.socketOpen(sid, socketTags, resolve) : this.httpOpen(sid, request, resolve));
    });
    this.host.send({ t: "po", sid, port, method: request.method, path, headers, body, ...(protocols ? { ws: protocols } : {}) });
    return answer;
  }

  /** A preview frame from the sidecar. */
  fromSidecar(frame: FromSidecar): void {
    const open = this.open.get(frame.sid);
    if (open) {
      if (frame.t === "ph") open.head(frame);
      else if (frame.t === "pd") open.data(frame);
      else if (frame.t === "pw") open.credit(frame.n);
      else open.close(frame);
      return;
    }
    // A WebSocket that was answered: its socket is found by its tag (the object may have slept since).
    for (const ws of this.host.sockets(sidTag(frame.sid))) {
      if (frame.t === "pd") sendQuietly(ws, frame.text ? decoder.decode(frame.bytes) : frame.bytes);
      else if (frame.t === "px") closeQuietly(ws, frame.problem ? 1011 : (frame.code ?? 1000), frame.problem?.detail ?? frame.reason ?? "");
    }
  }

  /** A browser's message on a preview socket goes to the app. */
  socketMessage(ws: WebSocket, sid: string, message: string | ArrayBuffer): void {
    // TextEncoder's bytes are a plain ArrayBuffer's (the lib types say "like" for every Uint8Array).
    const bytes = typeof message === "string" ? (encoder.encode(message) as Uint8Array<ArrayBuffer>) : new Uint8Array(message);
    if (bytes.length > PREVIEW_MESSAGE_MAX_BYTES) {
      closeQuietly(ws, 1009, `a preview's message is at most ${PREVIEW_MESSAGE_MAX_BYTES} bytes`);
      this.host.send({ t: "px", sid, code: 1009, reason: "message too big" });
      return;
    }
    this.host.send({ t: "pd", sid, ...(typeof message === "string" ? { text: true } : {}), bytes });
  }

  /** The browser closed a preview socket: the app's socket closes too. */
  socketClosed(sid: string, code: number, reason: string): void {
    this.host.send({ t: "px", sid, code: code === 1005 || code === 1006 ? 1000 : code, reason: reason.slice(0, 120) });
  }

  /** The tunnel dropped or the sidecar restarted: every preview ends now, saying why. */
  failAll(problem: ProblemInit): void {
    const ends = [...this.open.keys()];
    for (const sid of ends) this.open.get(sid)?.close({ t: "px", sid, problem });
    for (const ws of this.host.sockets(PREVIEW_TAG)) closeQuietly(ws, 1012, problem.detail);
  }

  // ---------- HTTP ----------

  private httpOpen(sid: string, request: Request, resolve: (response: Response) => void): Open {
    let controller: ReadableStreamDefaultController<Uint8Array> | null = null;
    let enqueued = 0;
    let credited = 0;
    let ended = false;
    /** Request bytes the sidecar will still take; a waiter for more. */
    let requestCredit = 0;
    let moreCredit: (() => void) | null = null;
    let pumping = false;
    const end = () => {
      ended = true;
      this.open.delete(sid);
      moreCredit?.();
    };
    const body = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          controller = c;
        },
        // The browser took bytes: what left the queue is credited back, a quarter window at a time.
        pull: (c) => {
          const taken = enqueued - (PREVIEW_WINDOW_BYTES - (c.desiredSize ?? 0)) - credited;
          if (taken < PREVIEW_WINDOW_BYTES / 4 || ended) return;
          credited += taken;
          this.host.send({ t: "pw", sid, n: taken });
        },
        cancel: () => {
          if (!ended) this.host.send({ t: "px", sid, reason: "the browser stopped reading" });
          end();
        },
      },
      new ByteLengthQueuingStrategy({ highWaterMark: PREVIEW_WINDOW_BYTES }),
    );
    const pump = async () => {
      if (!request.body) return;
      const declared = Number(request.headers.get("content-length") ?? Number.NaN);
      try {
        await sendBody(request.body, Number.isSafeInteger(declared) ? declared : null, {
          ready: async () => {
            while (requestCredit <= 0 && !ended) await new Promise<void>((wake) => (moreCredit = wake));
            return !ended;
          },
          piece: (bytes) => {
            requestCredit -= bytes.length;
            this.host.send({ t: "pd", sid, bytes });
          },
          end: () => this.host.send({ t: "pd", sid, fin: true, bytes: new Uint8Array(0) }),
        });
      } catch (err) {
        if (!ended) this.host.send({ t: "px", sid, reason: "the request's body could not be read" });
        end();
        console.error("a preview's request body failed:", err);
      }
    };
    const data = (frame: PreviewData) => {
      if (frame.bytes.length) {
        enqueued += frame.bytes.length;
        controller?.enqueue(frame.bytes);
      }
      if (frame.fin) {
        controller?.close();
        end();
      }
    };
    return {
      head: (frame) => {
        const headers = new Headers(frame.headers);
        const encoded = headers.has("content-encoding");
        // The app's bytes pass as they are: a compressed body stays compressed, never compressed again.
        resolve(new Response(nullBody(frame.status) ? null : body, { status: frame.status, headers, ...(encoded ? { encodeBody: "manual" as const } : {}) }));
        // The body's first bytes, or all of it, may come with the head.
        if (frame.bytes || frame.fin) data({ t: "pd", sid, bytes: frame.bytes ?? new Uint8Array(0), ...(frame.fin ? { fin: true } : {}) });
      },
      data,
      credit: (n) => {
        requestCredit += n;
        moreCredit?.();
        moreCredit = null;
        // The first credit says the app is there: the request's body starts to flow.
        if (!pumping) {
          pumping = true;
          void pump();
        }
      },
      close: (frame) => {
        const problem = frame.problem ?? { code: "stream_error" as const, detail: frame.reason ?? "the app ended the response" };
        resolve(problemResponse(problem)); // before the head: the answer (after it, resolve does nothing)
        try {
          controller?.error(new Error(problem.detail));
        } catch {
          // already closed
        }
        end();
      },
    };
  }

  // ---------- WebSocket ----------

  private socketOpen(sid: string, tags: string[], resolve: (response: Response) => void): Open {
    return {
      head: (frame) => {
        this.open.delete(sid);
        const { 0: client, 1: server } = new WebSocketPair();
        this.host.accept(server, [PREVIEW_TAG, sidTag(sid), ...tags]);
        server.serializeAttachment({ kind: "preview", sid } satisfies z.infer<typeof SocketAttachment>);
        const headers = frame.protocol ? { "sec-websocket-protocol": frame.protocol } : undefined;
        resolve(new Response(null, { status: 101, webSocket: client, ...(headers ? { headers } : {}) }));
      },
      data: () => {},
      credit: () => {},
      close: (frame) => {
        this.open.delete(sid);
        resolve(problemResponse(frame.problem ?? { code: "stream_error", detail: frame.reason ?? "the app refused the WebSocket" }));
      },
    };
  }
}

/** Statuses whose response has no body (a Response refuses one). */
function nullBody(status: number): boolean {
  return status === 101 || status === 204 || status === 205 || status === 304;
}

function sendQuietly(ws: WebSocket, message: string | Uint8Array): void {
  try {
    ws.send(message);
  } catch {
    // closing: its close handler tells the app
  }
}
