/**
 * A machine object's sessions, wired (docs/architecture.md, "Sessions"): the recorder, the calls made with
 * its records, and the prompt queue they share, over the object's storage and its tunnel.
 */
import type { WorkerFrame } from "@agent-runtime/protocol/frames";
import type { RuntimeEvent } from "../notifications/events";
import type { Tunnel } from "../machine/tunnel";
import { PromptQueueStore } from "./prompt-queue-store";
import { SessionRecorder } from "./recorder";
import { SessionCalls } from "./session-calls";

export interface MachineSessionsHost {
  tunnel: Tunnel;
  machine(): string;
  /** The machine recorded its first session (the team lists only such machines). */
  announce(): void;
  /** What a person away may want to hear of. */
  notify(event: RuntimeEvent): void;
  /** The frame that makes the recorder follow a server's stream, if it does not already. */
  follow(serverId: string): WorkerFrame | null;
  sseIdleCloseMs: number;
  promptTimeoutMs: number;
}

export function machineSessions(storage: DurableObjectStorage, host: MachineSessionsHost): { recorder: SessionRecorder; calls: SessionCalls } {
  const { tunnel } = host;
  const queued = new PromptQueueStore(storage);
  const online = () => tunnel.live() !== null;
  const recorder = new SessionRecorder(storage, host.machine, online, host.announce, host.notify, (id) => queued.queuedOf(id));
  const calls = new SessionCalls(
    recorder,
    {
      call: (op, args, timeoutMs) => tunnel.call(op, args, timeoutMs),
      online,
      record: (serverId) => {
        const frame = host.follow(serverId);
        if (frame) tunnel.send(frame);
      },
      instance: () => tunnel.instance,
      machine: host.machine,
      sseIdleCloseMs: host.sseIdleCloseMs,
      promptTimeoutMs: host.promptTimeoutMs,
    },
    queued,
  );
  return { recorder, calls };
}
