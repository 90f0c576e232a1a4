/**
 * What the machine does when its sidecar comes, goes, or stays away (docs/architecture.md, "The machine
 * object"): the hello's one call to the team, the welcome, calls and streams resumed or failed, people told,
 * and the work that waited for the machine (queued prompts, tasks, the team's documents) sent out.
 */
import type { SidecarFrame } from "@agent-runtime/protocol/frames";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import { sidecarVersionAdvice } from "@agent-runtime/protocol/version";
import { closeQuietly } from "../../lib/close-reason";
import type { AcpConnections } from "../acp-transport/connection-registry";
import type { MachineNotifications } from "../notifications/machine-notifications";
import type { PreviewStreams } from "../preview/preview-streams";
import type { SessionRecorder } from "../sessions/recorder";
import type { Subscribers } from "../streams/subscribers";
import type { TaskRunner } from "../tasks/task-runner";
import type { MachineFloor } from "../sandbox/machine-floor";
import type { MachineTeam } from "./machine-team";
import { greet } from "./sidecar-connection";
import { attachmentOf, sendFrame, type Tunnel } from "./tunnel";

export interface LifecycleParts {
  tunnel: Tunnel;
  team: MachineTeam;
  notifications: MachineNotifications;
  sessions: SessionRecorder;
  /** Sends every session's prompts that waited for the machine. */
  drainPrompts(): Promise<void>;
  tasks: TaskRunner;
  /** What the machine says of its sandbox (its owner's floor), kept from each hello. */
  floor: MachineFloor;
  subscribers: Subscribers;
  previews: PreviewStreams;
  acpConnections: AcpConnections;
  /** Attempts of groups: reconciled with the team's record on each hello (a report may have been lost). */
  attempts: { reconcile(): Promise<void> };
  machineName(): string;
  waitUntil(work: Promise<unknown>): void;
}

export class SidecarLifecycle {
  constructor(private readonly parts: LifecycleParts) {}

  async hello(ws: WebSocket, hello: Extract<SidecarFrame, { t: "hello" }>): Promise<void> {
    const { team, notifications, sessions, tasks, waitUntil } = this.parts;
    const attachment = greet(ws, hello);
    if (!attachment) return;
    this.parts.floor.keep(hello.sandbox ?? null); // before any task or restore starts an agent below
    // One call to the team per connect (it records the machine, answers the team's documents), then the welcome.
    const registered = await team.connected(attachment, hello);
    // `ports`: the sidecar says when what listens changes, which the sessions' watchers hear (sessions-watch.ts).
    sendFrame(ws, { t: "welcome", machine: attachment.machine, sidecar: sidecarVersionAdvice(hello.sidecarVersion), ports: true });
    if (registered) await notifications.keep(registered.subscriptions);
    // Back after people were told it went away: they are told it is back.
    await notifications.cameBack(attachment.machine);
    this.resume(ws, hello.bootId ?? null);
    sessions.machineChanged(); // followers see it back; prompts that waited for it go out
    waitUntil(this.parts.drainPrompts());
    waitUntil(tasks.drain()); // tasks that waited for the machine start
    waitUntil(this.parts.attempts.reconcile()); // what the team missed of this machine's attempts is said again
    if (!registered) return;
    // Every machine gets the team's documents when it connects (the sidecar skips a version it applied already).
    waitUntil(team.applyDocuments(registered.documents, registered.recorded));
  }

  /** The tunnel's socket closed or went half-open: the grace starts (unless a newer socket replaced it). */
  async gone(ws: WebSocket, code: number): Promise<void> {
    const { tunnel, sessions, previews, team } = this.parts;
    sessions.flush(); // what the recorder holds in memory is written before the machine is away
    closeQuietly(ws, code === 1005 || code === 1006 ? 1000 : code, "closed");
    if (!tunnel.closed(code)) return; // replaced by a newer socket: nothing changed for callers
    previews.failAll({ code: "machine_offline", detail: "the tunnel to the machine dropped: open the preview again" });
    sessions.machineChanged(); // followers see it offline now, not at their next read
    const machine = attachmentOf(ws)?.machine;
    if (machine) await team.disconnected(machine);
  }

  /** Away for good, not a blip (it did not come back within the grace): calls failed; streams fail, people are told once. */
  away(problem: ProblemInit): void {
    this.parts.waitUntil(this.parts.notifications.wentAway(this.parts.machineName()));
    this.parts.subscribers.fail(problem);
  }

  /** After a hello, calls and streams go on (`Tunnel.greeted`); a restarted sidecar's streams and previews fail at once. */
  private resume(ws: WebSocket, bootId: string | null): void {
    const { tunnel, subscribers, previews, acpConnections } = this.parts;
    const { restarted } = tunnel.greeted(ws, bootId);
    if (restarted) {
      const problem = {
        code: "machine_restarted",
        detail: "the machine's sidecar restarted: this stream's source (its process, agent or app) is gone",
      } as const;
      subscribers.fail(problem);
      previews.failAll(problem);
      acpConnections.allAgentsGone();
    }
    for (const frame of subscribers.subscribeFrames()) sendFrame(ws, frame);
  }
}
