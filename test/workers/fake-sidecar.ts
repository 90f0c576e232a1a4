/**
 * A sidecar made of frames, for the in-process tier (`*.workers.test.ts`, docs/architecture.md "Tests"):
 * it dials the worker's tunnel route from inside workerd with a real machine token, says hello, and
 * hands the test each call the machine object sends, parsed as the real sidecar parses it. The test
 * answers, fails or ignores each call, drops the socket, or comes back as the same or a new process.
 */
import { SELF, env } from "cloudflare:test";
import {
  encodeFrame,
  joinPieces,
  type PackedEvents,
  packEvents,
  parseWorkerFrame,
  TUNNEL_PROTOCOL_VERSION,
  type SidecarFrame,
  type StreamEvent,
  type WorkerFrame,
} from "@agent-runtime/protocol/frames";
import { parseOpArgs, type OpArgs, type OpName, type OpResult } from "@agent-runtime/protocol/ops";
import { mintMachineToken } from "@agent-runtime/protocol/machine-token";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import type { MachineSandbox } from "@agent-runtime/protocol/sandbox";

/** One call the machine object made: its operation, its parsed arguments, and how to answer it. */
export interface ReceivedCall<N extends OpName = OpName> {
  id: string;
  op: N;
  args: OpArgs<N>;
}

type SubFrame = Extract<WorkerFrame, { t: "sub" }>;

type Waiter = { match: (frame: WorkerFrame) => boolean; resolve: (frame: WorkerFrame) => void; reject: (error: Error) => void };

export class FakeSidecar {
  /** Every frame received, in order (calls included). */
  readonly received: WorkerFrame[] = [];
  private readonly waiters = new Set<Waiter>();
  private closedWith: { code: number; reason: string } | null = null;

  private constructor(
    readonly machine: string,
    readonly bootId: string,
    private readonly socket: WebSocket,
  ) {
    socket.addEventListener("message", (event) => {
      const parsed = parseWorkerFrame(event.data as string | ArrayBuffer);
      if (!parsed.ok) {
        // Whoever waits hears of it at once (a throw here would only reach workerd's log).
        const error = new Error(`the fake sidecar could not read a frame: ${parsed.error}`);
        for (const waiter of this.waiters) waiter.reject(error);
        this.waiters.clear();
        return;
      }
      this.received.push(parsed.frame);
      for (const waiter of [...this.waiters]) {
        if (!waiter.match(parsed.frame)) continue;
        this.waiters.delete(waiter);
        waiter.resolve(parsed.frame);
        return;
      }
    });
    socket.addEventListener("close", (event) => {
      this.closedWith = { code: event.code, reason: event.reason };
    });
  }

  /**
   * Dial in as `machine` (a new process unless `bootId` says it is the same one coming back) and wait for
   * the welcome. `offers`: what its hello offers besides (an `uploadWindow`, its `sandbox` and floor).
   */
  static async connect(
    machine: string,
    bootId: string = crypto.randomUUID(),
    offers: { uploadWindow?: number; preview?: { expose: string }; sandbox?: MachineSandbox } = {},
  ): Promise<FakeSidecar> {
    const token = await mintMachineToken(env.TUNNEL_SECRET, machine);
    const res = await SELF.fetch(`https://runtime.test/_tunnel/${machine}`, { headers: { upgrade: "websocket", authorization: `Bearer ${token}` } });
    if (res.status !== 101 || !res.webSocket) throw new Error(`the tunnel refused the fake sidecar: ${res.status} ${await res.text()}`);
    // At this compatibility date a WebSocket hands binary messages over as Blobs unless told otherwise.
    res.webSocket.binaryType = "arraybuffer";
    res.webSocket.accept();
    const sidecar = new FakeSidecar(machine, bootId, res.webSocket);
    const welcome = sidecar.next((f) => f.t === "welcome" || f.t === "bye");
    sidecar.send({ t: "hello", protocol: TUNNEL_PROTOCOL_VERSION, machine, sidecarVersion: "0.1.0", platform: "linux-x64 (fake)", bootId, ...offers });
    const answer = await welcome;
    if (answer.t !== "welcome") throw new Error(`the machine object said goodbye: ${JSON.stringify(answer)}`);
    return sidecar;
  }

  send(frame: SidecarFrame | PackedEvents): void {
    this.socket.send(encodeFrame(frame));
  }

  /** The next frame `match` accepts (frames received before this call do not count). */
  next(match: (frame: WorkerFrame) => boolean): Promise<WorkerFrame> {
    return new Promise((resolve, reject) => this.waiters.add({ match, resolve, reject }));
  }

  /** The next call of `op`, its arguments parsed against the operation table as the real sidecar does. */
  async call<N extends OpName>(op: N): Promise<ReceivedCall<N>> {
    const frame = await this.next((f) => f.t === "req" && f.op === op);
    if (frame.t !== "req") throw new Error("unreachable: matched a req frame");
    const args = parseOpArgs(op, frame.args);
    if (!args.ok) throw new Error(`the machine object sent ${op} arguments its own table refuses: ${args.error}`);
    return { id: frame.id, op, args: args.args };
  }

  /** The next subscription the machine object opens (`sub`) that `match` accepts. */
  async subscription(match: (frame: SubFrame) => boolean = () => true): Promise<SubFrame> {
    const frame = await this.next((f) => f.t === "sub" && match(f));
    if (frame.t !== "sub") throw new Error("unreachable: matched a sub frame");
    return frame;
  }

  /**
   * Output of a stream, as the sidecar's stream hub sends it: JSON, or packed in a binary frame (`packEvents`)
   * for a subscription that asked; for one subscription, or for several (`also`) at the same point of a stream.
   */
  events(subs: string | [string, ...string[]], events: StreamEvent[], how: "json" | "packed" = "json"): void {
    const [sub, ...also] = typeof subs === "string" ? [subs] : subs;
    this.send(how === "packed" ? packEvents(sub, events, undefined, also) : { t: "ev", sub, ...(also.length ? { also } : {}), events });
  }

  /** A terminal's output as bytes (`out`, one binary frame), for a subscription that asked for them. */
  output(sub: string, pieces: [seq: number, text: string][]): void {
    this.send({ t: "out", sub, ...joinPieces(pieces.map(([seq, text]) => [seq, new TextEncoder().encode(text)])) });
  }

  answer<N extends OpName>(call: ReceivedCall<N>, value: OpResult<N>): void {
    this.send({ t: "res", id: call.id, ok: true, value });
  }

  /** An answer the operation table does not allow (a sidecar of another version would send one). */
  answerUnchecked(call: ReceivedCall, value: unknown): void {
    this.send({ t: "res", id: call.id, ok: true, value });
  }

  fail(call: ReceivedCall, problem: ProblemInit): void {
    this.send({ t: "err", id: call.id, problem });
  }

  /** The socket drops (a laptop sleeping, a network change): no goodbye. */
  drop(): void {
    this.socket.close(1001, "the fake sidecar went away");
  }

  get closed(): { code: number; reason: string } | null {
    return this.closedWith;
  }
}
