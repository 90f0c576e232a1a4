/**
 * Who holds each live stream a machine's object serves (docs/architecture.md, "Streams end with their
 * token"). A token's check at the door says nothing about the hour-long transcript, ACP stream, ACP
 * WebSocket or terminal it opened: every one of them is held by the identity that opened it, and ends
 * with a last word saying why when that token is revoked or expires.
 *
 * One mechanism for both kinds of stream:
 *  - an SSE body (process and ACP server events, a session's transcript, an `/acp` connection's streams)
 *    lives in this object's memory while it is open: it is kept here by token, with a timer for its expiry;
 *  - a hibernatable WebSocket (a terminal, an `/acp` WebSocket) may outlive this object's memory: its
 *    holder is written into its tags (`tok:<id>`, `exp:<ms>`), and the object's alarm closes it when it
 *    expires.
 * A revocation reaches only the machines where the token holds streams: the token's own object keeps
 * that list (`streamsOn`), told the first time a token opens one here.
 */
import { z } from "zod";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import type { SseBody } from "./sse-body";
import type { Timed } from "../storage/alarm";

/** The identity a stream is opened for, as the worker's route hands it to the object (parsed, never cast). */
export const StreamHolder = z.object({
  /** The issued token's id; null for the bootstrap API_TOKEN and Access identities (not revocable one by one). */
  tokenId: z.string().max(64).nullable(),
  /** A token's name, or an Access identity's email. */
  name: z.string().max(512),
  /** When the identity (its token) expires; null: never. */
  expiresAtMs: z.number().nullable(),
});
export type StreamHolder = z.infer<typeof StreamHolder>;

/** The header a route puts the holder in when it hands a WebSocket upgrade to the object. */
export const HOLDER_HEADER = "x-stream-holder";

const TOKEN_TAG = "tok:";
const EXPIRES_TAG = "exp:";
/** setTimeout's longest wait; a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A header value is bytes, and a token's name may be any text: the JSON goes percent-encoded. */
export function holderHeader(holder: StreamHolder): Record<string, string> {
  return { [HOLDER_HEADER]: encodeURIComponent(JSON.stringify(holder)) };
}

/** The holder a route put on an upgrade request; null when it is missing or unreadable. */
export function holderOf(request: Request): StreamHolder | null {
  const text = request.headers.get(HOLDER_HEADER);
  if (!text) return null;
  try {
    const parsed = StreamHolder.safeParse(JSON.parse(decodeURIComponent(text)));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

const theToken = (name: string | null) => (name === null ? "the token" : `the token '${name}'`);

export function revokedProblem(name: string | null): ProblemInit {
  return { code: "token_invalid", detail: `${theToken(name)} that opened this stream was revoked`, extensions: { reason: "revoked" } };
}

/** A socket keeps no name in its tags: its last word names no token. */
export function expiredProblem(name: string | null): ProblemInit {
  return { code: "token_invalid", detail: `${theToken(name)} that opened this stream expired`, extensions: { reason: "expired" } };
}

/** A close frame's reason for a held socket: why first (`token revoked: …`), since a long one is cut. */
export function closeTextOf(problem: ProblemInit): string {
  return `token ${String(problem.extensions?.reason ?? "ended")}: ${problem.detail}`;
}

/** What a socket's tags say of its holder. */
function socketHolder(tags: string[]): { tokenId: string | null; expiresAtMs: number | null } {
  const token = tags.find((t) => t.startsWith(TOKEN_TAG));
  const expires = tags.find((t) => t.startsWith(EXPIRES_TAG));
  return { tokenId: token ? token.slice(TOKEN_TAG.length) : null, expiresAtMs: expires ? Number(expires.slice(EXPIRES_TAG.length)) : null };
}

export interface HolderHost {
  /** The object's hibernatable sockets (with this tag). */
  sockets(tag?: string): WebSocket[];
  tagsOf(ws: WebSocket): string[];
  /** Close one socket with its kind's last word (a terminal's error frame, an ACP socket's close reason). */
  endSocket(ws: WebSocket, problem: ProblemInit): void;
  /** Make sure the object's alarm rings by `atMs`. */
  wake(atMs: number): Promise<void>;
  /**
   * Tell the token's own object that it holds streams on this machine; answers whether the token still
   * holds (a revocation that raced the opening ends the stream at once).
   */
  announce(tokenId: string): Promise<{ revoked: boolean }>;
}

export class StreamHolders implements Timed {
  /** Open SSE bodies by token id. */
  private readonly bodies = new Map<string, Set<SseBody>>();
  /** Tokens already announced to their object while this object is in memory. */
  private readonly announced = new Set<string>();

  constructor(private readonly host: HolderHost) {}

  /** An SSE body opened for `holder`: it ends with a final `event: error` when the token is revoked or expires. */
  holdBody(holder: StreamHolder, body: SseBody): void {
    if (holder.expiresAtMs !== null) {
      const expiresAtMs = holder.expiresAtMs;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        const wait = expiresAtMs - Date.now();
        if (wait <= 0) return body.fail(expiredProblem(holder.name));
        timer = setTimeout(arm, Math.min(wait, MAX_TIMER_MS));
      };
      arm();
      body.whenClosed(() => {
        if (timer !== undefined) clearTimeout(timer);
      });
    }
    const tokenId = holder.tokenId;
    if (tokenId === null || body.isClosed) return;
    const held = this.bodies.get(tokenId) ?? new Set<SseBody>();
    this.bodies.set(tokenId, held);
    held.add(body);
    body.whenClosed(() => {
      held.delete(body);
      if (held.size === 0 && this.bodies.get(tokenId) === held) this.bodies.delete(tokenId);
    });
    this.announce(holder);
  }

  /** The tags a hibernatable socket opened for `holder` carries; its expiry wakes the object's alarm. */
  socketTags(holder: StreamHolder): string[] {
    const tags: string[] = [];
    if (holder.tokenId !== null) {
      tags.push(`${TOKEN_TAG}${holder.tokenId}`);
      this.announce(holder);
    }
    if (holder.expiresAtMs !== null) {
      tags.push(`${EXPIRES_TAG}${holder.expiresAtMs}`);
      void this.host.wake(holder.expiresAtMs).catch((err: unknown) => console.error("could not set the alarm for a stream's expiry:", err));
    }
    return tags;
  }

  /** A socket's holder expired while its message was on its way: it is closed instead of answered. */
  socketExpired(ws: WebSocket, nowMs = Date.now()): boolean {
    const { expiresAtMs } = socketHolder(this.host.tagsOf(ws));
    if (expiresAtMs === null || expiresAtMs > nowMs) return false;
    this.host.endSocket(ws, expiredProblem(null));
    return true;
  }

  /** The token was revoked: every stream it holds here ends now. Answers how many ended. */
  endHeldBy(tokenId: string, name: string): number {
    const problem = revokedProblem(name);
    const bodies = [...(this.bodies.get(tokenId) ?? [])];
    for (const body of bodies) body.fail(problem);
    const sockets = this.host.sockets(`${TOKEN_TAG}${tokenId}`);
    for (const ws of sockets) this.host.endSocket(ws, problem);
    return bodies.length + sockets.length;
  }

  /** The alarm rang: sockets whose holder expired close. */
  async runDue(nowMs: number): Promise<void> {
    for (const ws of this.host.sockets()) {
      const { expiresAtMs } = socketHolder(this.host.tagsOf(ws));
      if (expiresAtMs !== null && expiresAtMs <= nowMs) this.host.endSocket(ws, expiredProblem(null));
    }
  }

  /** When the next held socket expires (null: none). */
  nextDueMs(): number | null {
    let next: number | null = null;
    for (const ws of this.host.sockets()) {
      const { expiresAtMs } = socketHolder(this.host.tagsOf(ws));
      if (expiresAtMs !== null) next = Math.min(next ?? expiresAtMs, expiresAtMs);
    }
    return next;
  }

  /** A holder of something other than a stream here (a preview's pass): its token must reach this machine when revoked. */
  watch(holder: StreamHolder): void {
    this.announce(holder);
  }

  private announce(holder: StreamHolder): void {
    const tokenId = holder.tokenId;
    if (tokenId === null || this.announced.has(tokenId)) return;
    this.announced.add(tokenId);
    this.host
      .announce(tokenId)
      .then(({ revoked }) => {
        if (revoked) this.endHeldBy(tokenId, holder.name);
      })
      .catch((err: unknown) => {
        this.announced.delete(tokenId); // asked again with the next stream
        console.error(`could not tell token ${tokenId} that it holds streams here:`, err);
      });
  }
}
