/**
 * What the machine does when its sidecar comes, goes, or stays away (docs/architecture.md, "The machine
 * object"): the hello's one call to the team, the welcome, calls and streams resumed or failed, and each
 * registered feature told (machine/feature.ts), in the order they were registered.
 */
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import { sidecarVersionAdvice } from "@agent-runtime/protocol/version";
import { closeQuietly } from "../../lib/close-reason";
import type { Subscribers } from "../streams/subscribers";
import type { Back, HelloFrame, MachineFeature } from "./feature";
import type { MachineTeam } from "./machine-team";
import { greet } from "./sidecar-connection";
import { attachmentOf, sendFrame, type Tunnel } from "./tunnel";

export interface LifecycleParts {
  tunnel: Tunnel;
  team: MachineTeam;
  subscribers: Subscribers;
  features: readonly MachineFeature[];
  machineName(): string;
  waitUntil(work: Promise<unknown>): void;
}

export class SidecarLifecycle {
  constructor(private readonly parts: LifecycleParts) {}

  async hello(ws: WebSocket, hello: HelloFrame): Promise<void> {
    const { team, features } = this.parts;
    const attachment = greet(ws, hello);
    if (!attachment) return;
    for (const feature of features) feature.hello?.(hello); // before any task or restore starts an agent below
    // One call to the team per connect (it records the machine, answers the team's documents), then the welcome.
    const registered = await team.register(attachment, hello);
    // `ports`: the sidecar says when what listens changes, which the sessions' watchers hear (sessions-watch.ts).
    sendFrame(ws, { t: "welcome", machine: attachment.machine, sidecar: sidecarVersionAdvice(hello.sidecarVersion), ports: true });
    const back: Back = { machine: attachment.machine, registered };
    for (const feature of features) await feature.connected?.(back);
    this.resume(ws, hello.bootId ?? null);
    for (const feature of features) feature.resumed?.(back);
  }

  /** The tunnel's socket closed or went half-open: the grace starts (unless a newer socket replaced it). */
  async gone(ws: WebSocket, code: number): Promise<void> {
    closeQuietly(ws, code === 1005 || code === 1006 ? 1000 : code, "closed");
    if (!this.parts.tunnel.closed(code)) return; // replaced by a newer socket: nothing changed for callers
    const machine = attachmentOf(ws)?.machine ?? null;
    for (const feature of this.parts.features) await feature.gone?.(machine);
  }

  /** Away for good, not a blip (it did not come back within the grace): calls failed; streams fail, people are told once. */
  away(problem: ProblemInit): void {
    const machine = this.parts.machineName();
    for (const feature of this.parts.features) feature.away?.(problem, machine);
    this.parts.subscribers.fail(problem);
  }

  /** After a hello, calls and streams go on (`Tunnel.greeted`); a restarted sidecar's streams and previews fail at once. */
  private resume(ws: WebSocket, bootId: string | null): void {
    const { tunnel, subscribers, features } = this.parts;
    const { restarted } = tunnel.greeted(ws, bootId);
    if (restarted) {
      const problem = {
        code: "machine_restarted",
        detail: "the machine's sidecar restarted: this stream's source (its process, agent or app) is gone",
      } as const;
      subscribers.fail(problem);
      for (const feature of features) feature.restarted?.(problem);
    }
    for (const frame of subscribers.subscribeFrames()) sendFrame(ws, frame);
  }
}
