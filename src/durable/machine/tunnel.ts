/**
 * The worker's end of one machine's tunnel, apart from the Durable Object that hosts it (docs/architecture.md,
 * "The machine object" and "Guarantees"): which sidecar socket is live, the calls waiting for its answers (each re-sent after a dropped
 * tunnel, failed when the sidecar restarted or stayed away past the grace), and the boot id that tells a
 * reconnect of the same sidecar from a new one. Plain code over a small host interface, so that it is tested
 * without workerd (tunnel.test.ts); the machine's object owns the sockets, readers and viewers around it.
 */
import { z } from "zod";
import { encodeFrame, type SidecarFrame, UPLOAD_WINDOW_MAX, type WorkerFrame } from "@agent-runtime/protocol/frames";
import { OPS, type OpArgs, type OpName, type OpResult, parseOpResult } from "@agent-runtime/protocol/ops";
import { commonAcpPostAnswer } from "@agent-runtime/protocol/ops/acp";
import { LIMITS } from "@agent-runtime/protocol/limits";
import { type Outcome, PendingCalls } from "@agent-runtime/protocol/pending-calls";
import { PreviewOffer } from "@agent-runtime/protocol/preview";
import type { ProblemInit } from "@agent-runtime/protocol/problems";

/** The tag of the sidecar's socket among the object's hibernatable sockets. */
export const SIDECAR_TAG = "sidecar";

/** A socket's `readyState` when it is open (the constant, not `WebSocket.OPEN`: Node 20 has no WebSocket global). */
const OPEN = 1;

/** What a sidecar's socket carries across hibernation; read only through `attachmentOf`, which checks it. */
const TunnelAttachment = z.object({
  machine: z.string(),
  connectedAtMs: z.number(),
  hello: z.boolean(),
  /** The generation of the machine token this sidecar connected with. */
  generation: z.number().int(),
  /** How often the sidecar pings (from its hello); three intervals without a ping and the tunnel is dead. */
  heartbeatMs: z.number().int(),
  /** How many upload pieces the sidecar takes before the first is stored (its hello's `uploadWindow`). */
  uploadWindow: z.number().int().min(1).optional(),
  /** The sidecar serves previews (its hello's `preview`). */
  preview: PreviewOffer.optional(),
});
export type TunnelAttachment = z.infer<typeof TunnelAttachment>;

const attachments = new WeakMap<WebSocket, TunnelAttachment>();

/** The one accessor of a socket's attachment: parsed, so a socket from an older deployment cannot mislead us (null). */
export function attachmentOf(ws: WebSocket): TunnelAttachment | null {
  // Read (and checked) once per socket and instance: every call on the tunnel looks at it.
  const known = attachments.get(ws);
  if (known) return known;
  const parsed = TunnelAttachment.safeParse(ws.deserializeAttachment());
  if (!parsed.success) return null;
  attachments.set(ws, parsed.data);
  return parsed.data;
}

/** The one writer of a sidecar socket's attachment, so the accessor's memory never disagrees with it. */
export function setAttachment(ws: WebSocket, attachment: TunnelAttachment): void {
  ws.serializeAttachment(attachment);
  attachments.set(ws, attachment);
}

export interface TunnelHost {
  /** The sidecar sockets the runtime holds for this machine (hibernation keeps them across the object's sleeps). */
  sockets(): WebSocket[];
  /** When the runtime last answered this socket's ping by itself, if it ever did. */
  lastPingMs(ws: WebSocket): number | null;
  /** A socket whose sidecar stopped pinging (a machine that vanished without closing): the host ends it as closed. */
  halfOpen(ws: WebSocket): void;
  /** The sidecar stayed away past the grace: calls waiting on it have failed with `problem`; the host fails the rest. */
  away(problem: ProblemInit): void;
  /** How long calls wait for a dropped tunnel to come back. */
  graceMs: number;
}

interface CallInFlight {
  /** As sent: JSON text, or a binary frame for a call that carries bytes (sent again as it is after a reconnect). */
  frame: string | Uint8Array;
  op: OpName;
  /** The sidecar instance (boot id) it was sent to; null while it waits for a sidecar to come back. */
  sentTo: string | null;
}

export class Tunnel {
  private readonly pending = new PendingCalls<string, unknown, CallInFlight>();
  /** The boot id of the sidecar instance last greeted: a different one means it restarted. */
  private boot: string | null = null;
  private graceTimer: ReturnType<typeof setTimeout> | null = null;
  /** Call and subscription ids: unique per instance, so a re-sent id always means "the same call". */
  private readonly idPrefix = crypto.randomUUID().slice(0, 8);
  private nextId = 0;

  constructor(private readonly host: TunnelHost) {}

  newId(): string {
    return `${this.idPrefix}-${(this.nextId++).toString(36)}`;
  }

  /** A prefix no client uses, for requests of the runtime's own. */
  get instance(): string {
    return this.idPrefix;
  }

  /**
   * The live sidecar socket, if any. A socket whose sidecar has not pinged for three heartbeats is
   * half-open: the host ends it, and it counts as gone.
   */
  /** The machine whose sidecar is connected now, or null. */
  liveMachine(): string | null {
    const ws = this.live();
    return (ws && attachmentOf(ws)?.machine) || null;
  }

  live(): WebSocket | null {
    for (const ws of this.host.sockets()) {
      if (ws.readyState !== OPEN) continue;
      const attachment = attachmentOf(ws);
      if (!attachment) {
        ws.close(4003, "this connection's state is unreadable; reconnect");
        continue;
      }
      const { connectedAtMs, heartbeatMs } = attachment;
      const lastPing = this.host.lastPingMs(ws) ?? connectedAtMs;
      if (Date.now() - Math.max(lastPing, connectedAtMs) > 3 * heartbeatMs) {
        this.host.halfOpen(ws);
        continue;
      }
      return ws;
    }
    return null;
  }

  /** How many pieces of an upload may be on their way to the live sidecar at once (one, unless its hello offered more). */
  uploadWindow(): number {
    const ws = this.live();
    return Math.min(UPLOAD_WINDOW_MAX, (ws && attachmentOf(ws)?.uploadWindow) || 1);
  }

  /** What the live sidecar offers of previews: null when it offers none, undefined when no sidecar is there. */
  previewOffer(): PreviewOffer | null | undefined {
    const ws = this.live();
    return ws ? (attachmentOf(ws)?.preview ?? null) : undefined;
  }

  /** Whether calls can be made now: a live sidecar, or one that dropped moments ago and is expected back. */
  reachable(): boolean {
    return this.graceTimer !== null || this.live() !== null;
  }

  /** A frame to the live sidecar, if there is one (what needs it again after a reconnect is re-sent by `greeted`). */
  send(frame: WorkerFrame): void {
    const ws = this.live();
    if (ws) sendFrame(ws, frame);
  }

  /** Call an operation on the sidecar and wait for its answer (or a problem: offline, timeout, restarted). */
  call<N extends OpName>(op: N, args: OpArgs<N>, timeoutMs: number = OPS[op].deadlineMs): Promise<Outcome<OpResult<N>>> {
    const ws = this.live();
    // No sidecar and none expected back soon: offline at once. Within a reconnect's grace, the call waits.
    if (!ws && !this.graceTimer) return Promise.resolve({ ok: false, problem: offline() });
    const id = this.newId();
    const frame = encodeFrame({ t: "req", id, op, args } satisfies WorkerFrame);
    if (frame.length > LIMITS.maxFrameBytes) {
      return Promise.resolve({ ok: false, problem: { code: "payload_too_large", detail: `the request is larger than ${LIMITS.maxFrameBytes} bytes` } });
    }
    const answer = this.pending.wait(id, { frame, op, sentTo: ws ? this.boot : null }, timeoutMs, (callId, call) => {
      // The sidecar stops waiting too: what the call started is cancelled, and its id is free again.
      if (call.sentTo !== null) this.send({ t: "cancel", id: callId });
      return { code: "timeout", detail: `no answer from the machine within ${timeoutMs} ms (${op})` };
    });
    // A socket closing under us: the call stays pending and goes out again on reconnect.
    if (ws) sendTo(ws, frame);
    // The value was parsed against OPS[op].result when its frame came in (`answered`): this only tells TypeScript so.
    return answer as Promise<Outcome<OpResult<N>>>;
  }

  /** A call's answer from the sidecar, parsed against its operation's result schema before anyone sees it. */
  answered(frame: Extract<SidecarFrame, { t: "res" | "err" }>): void {
    if (frame.t === "err") {
      this.pending.settle(frame.id, { ok: false, problem: frame.problem });
      return;
    }
    // Answered already (a re-sent call), timed out or cancelled: nothing waits, nothing to do.
    const call = this.pending.meta(frame.id);
    if (!call) return;
    // The relay's answer, the one read per message, is checked by hand in its common shape (the schema decides the rest).
    const common = call.op === "acp.post" ? commonAcpPostAnswer(frame.value) : null;
    const result = common ? { ok: true as const, value: common } : parseOpResult(call.op, frame.value);
    this.pending.settle(
      frame.id,
      result.ok
        ? { ok: true, value: result.value }
        : {
            ok: false,
            problem: { code: "stream_error", detail: `the sidecar's answer to ${call.op} is not what this worker reads (${result.error}); update the sidecar` },
          },
    );
  }

  /**
   * A sidecar said hello on `ws`. The same instance gets what was in flight again (it answers a call it ran
   * already from memory, never twice); a restarted one never sees a call meant for the one that is gone:
   * those fail with 503 machine_restarted (`restarted` tells the host, whose streams fail too). Calls made
   * while no sidecar was there go out now.
   */
  greeted(ws: WebSocket, bootId: string | null): { restarted: boolean } {
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    const restarted = this.boot !== null && bootId !== this.boot;
    this.boot = bootId;
    if (restarted) {
      const problem: ProblemInit = {
        code: "machine_restarted",
        detail: "the machine's sidecar restarted while this call was in flight; it was not run again, retry it if it is safe to",
      };
      this.pending.settleAll((call) => (call.sentTo !== null ? { ok: false, problem } : null));
    }
    for (const [id, call] of this.pending.waiting()) {
      this.pending.setMeta(id, { ...call, sentTo: bootId });
      sendTo(ws, call.frame);
    }
    return { restarted };
  }

  /**
   * The sidecar's socket closed. A sidecar that said goodbye (1000) is not coming back soon: what is in
   * flight fails now. Otherwise it gets the grace to come back, and calls made meanwhile wait like those
   * in flight. False when another socket is live (it was replaced): nothing changed for callers.
   */
  closed(code: number): boolean {
    if (this.live()) return false;
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    if (code === 1000) this.giveUp();
    else this.graceTimer = setTimeout(() => this.giveUp(), this.host.graceMs);
    return true;
  }

  private giveUp(): void {
    this.graceTimer = null;
    if (this.live()) return;
    const problem: ProblemInit = { code: "machine_offline", detail: "the machine's sidecar disconnected and did not come back in time" };
    this.pending.settleAll(() => ({ ok: false, problem }));
    this.host.away(problem);
  }
}

export function offline(): ProblemInit {
  return { code: "machine_offline", detail: "this machine's sidecar is not connected" };
}

/** A frame to one socket, as the tunnel carries it (a `bye` or `bad` to a sidecar that sent something wrong, too). */
export function sendFrame(ws: WebSocket, frame: WorkerFrame): void {
  sendTo(ws, encodeFrame(frame));
}

function sendTo(ws: WebSocket, message: string | Uint8Array): void {
  try {
    ws.send(message);
  } catch {
    // The socket is closing: its close handler takes care of what was in flight.
  }
}
