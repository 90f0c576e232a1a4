/**
 * The machine object's features, registered (docs/architecture.md, "Features of an object"): each built
 * once per object over its storage and its tunnel, joined to the others it needs, and listed once in
 * `list`, in the order the object tells them of the sidecar's comings and goings and runs their timers.
 * The object (machine-core.ts) reaches a feature only through this list, or by its name in `parts` for
 * its RPC methods (machine.ts).
 */
import { UnfinishedAttempts } from "@agent-runtime/protocol/attempts";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import type { Env } from "../../env";
import { settings } from "../../settings";
import { acpTransport } from "../acp-transport/acp-gateway";
import { MachineAttempts } from "../attempts/machine-attempts";
import { MachineFiles } from "../files/machine-files";
import { MachineLogins } from "../logins/machine-logins";
import { Deliverer, delivererSettings } from "../notifications/deliverer";
import { MachineNotifications } from "../notifications/machine-notifications";
import { MachinePreviews } from "../preview/machine-previews";
import { MachineFloor } from "../sandbox/machine-floor";
import { machineSessions } from "../sessions/machine-sessions";
import { alarmBy } from "../storage/alarm";
import { SseReaders } from "../streams/reader-registry";
import { StreamHolders } from "../streams/stream-holders";
import { TerminalViewers } from "../terminals/terminal-viewers";
import { RevocationWatch } from "../tokens/revocation-watch";
import { TokenGeneration } from "../tokens/token-generation";
import { teamStub, tokenStub } from "../stubs";
import type { MachineFeature } from "./feature";
import { MachineTeam } from "./machine-team";
import { SIDECAR_TAG, type Tunnel } from "./tunnel";

export interface MachineHost {
  ctx: DurableObjectState;
  env: Env;
  tunnel: Tunnel;
  /** The machine this object holds. */
  machine(): string;
  /** A client socket whose holder's token was revoked or expired ends with its kind's last word. */
  endSocket(ws: WebSocket, problem: ProblemInit): void;
}

export type MachineParts = ReturnType<typeof machineFeatures>["parts"];

export function machineFeatures(host: MachineHost) {
  const { ctx, env, tunnel } = host;
  const config = settings(env);
  const waitUntil = (work: Promise<unknown>) => ctx.waitUntil(work);
  const wake = (at: number) => alarmBy(ctx.storage, at);
  const sockets = { sockets: (tag: string) => ctx.getWebSockets(tag), accept: (ws: WebSocket, tags: string[]) => ctx.acceptWebSocket(ws, tags) };
  const sidecar = { send: (frame: Parameters<Tunnel["send"]>[0]) => tunnel.send(frame), reachable: () => tunnel.reachable(), newId: () => tunnel.newId() };
  const hides = (serverId: string, seq: number, text: string) => sessions.gate.hides(serverId, seq, text);

  const team = new MachineTeam({
    env,
    storage: ctx.storage,
    waitUntil,
    machine: host.machine,
    connectedMachine: () => tunnel.liveMachine(),
    call: (op, args, timeoutMs) => tunnel.call(op, args, timeoutMs),
    keepPolicy: (stored) => sessions.gate.keep(stored),
  });
  const files = new MachineFiles({ call: (op, args) => tunnel.call(op, args), uploadWindow: () => tunnel.uploadWindow(), waitUntil });
  const readers = new SseReaders({ ...sidecar, idleCloseMs: config.sseIdleCloseMs, acceptMs: config.reconnectGraceMs, hides });
  const holders = new StreamHolders({
    sockets: (tag) => ctx.getWebSockets(tag),
    tagsOf: (ws) => ctx.getTags(ws),
    endSocket: host.endSocket,
    wake,
    announce: (tokenId) => tokenStub(env, tokenId).streamsOn(host.machine(), Date.now()),
  });
  const viewers = new TerminalViewers({
    ...sidecar,
    ...sockets,
    call: (op, args) => tunnel.call(op, args),
    holderTags: (holder) => holders.socketTags(holder),
  });
  const notifications = new MachineNotifications(
    ctx.storage,
    new Deliverer(ctx.storage, { wake, gone: (id) => teamStub(env).dropSubscription(id), ...delivererSettings(config) }),
    () => team.announceRecords(),
    waitUntil,
  );
  const tokens = new TokenGeneration(ctx.storage, () => ctx.getWebSockets(SIDECAR_TAG));
  // Tokens the worker checked once per isolate: a revoked one's messages are refused here (tokens/revocation-watch.ts).
  const revocations = new RevocationWatch({ announce: (tokenId) => tokenStub(env, tokenId).streamsOn(host.machine(), Date.now()) });
  const floor = new MachineFloor(ctx.storage);
  const sessions = machineSessions(ctx.storage, {
    tunnel,
    floor: () => floor.floor(),
    machine: host.machine,
    announce: () => team.announceRecords(),
    notify: (event) => waitUntil(notifications.notify(event)),
    relay: { events: (serverId, events) => acp.connections.agentEvents(serverId, events), gone: (serverId) => acp.connections.agentGone(serverId) },
    appendAudit: (entries) => teamStub(env).appendAuditBatch(entries),
    waitUntil,
    wake,
    sseIdleCloseMs: config.sseIdleCloseMs,
    promptTimeoutMs: config.acpTimeoutMs,
    startTimeoutMs: config.installTimeoutMs,
    taskChanged: (task) => attempts.taskChanged(task),
  });
  const acp = acpTransport(
    {
      post: (req, timeoutMs, restore) => sessions.calls.acpPost(req, timeoutMs, restore),
      stop: (serverId) => tunnel.call("acp.delete", { serverId }, 30_000).then(() => undefined),
      sockets: (tag) => ctx.getWebSockets(tag),
      hides,
    },
    { call: (op, args) => tunnel.call(op, args), reachable: () => tunnel.reachable(), accept: sockets.accept, acpTimeoutMs: config.acpTimeoutMs },
    holders,
  );
  const attempts = new MachineAttempts(ctx.storage, {
    machine: host.machine,
    tasks: (call) => sessions.tasks.handle(call),
    session: (id) => sessions.recorder.reads.get(id),
    call: (op, args, timeoutMs) => tunnel.call(op, args, timeoutMs),
    report: async (report) => void (await teamStub(env).groupCall({ op: "report", report })),
    unfinished: async () => {
      const answer = await teamStub(env).groupCall({ op: "unfinished", machine: host.machine() });
      if (!answer.ok) throw new Error("the team object refused the question");
      return UnfinishedAttempts.parse(answer.value).attempts;
    },
    reachable: () => tunnel.reachable(),
    wake: (at) => waitUntil(wake(at)),
    waitUntil,
  });
  const previews = new MachinePreviews({ tunnel, storage: ctx.storage, holders, ...sockets });
  const logins = new MachineLogins(ctx.storage, {
    call: (op, args, timeoutMs) => tunnel.call(op, args, timeoutMs),
    send: (frame) => tunnel.send(frame),
    retry: (agent) => sessions.calls.retryLogins(agent, config.acpTimeoutMs),
    waitUntil,
    machine: host.machine,
    notify: (event) => waitUntil(notifications.notify(event)),
  });

  // The registration: one line a feature, in the order each hook and the alarm run them.
  const list: MachineFeature[] = [
    floor, // the owner's floor, kept at hello before anything below starts an agent
    notifications, // "is back" / "went away"; deliveries on the alarm
    previews,
    acp.gateway,
    sessions.feature,
    sessions.gate, // the permission policy's deadlines
    sessions.tasks,
    team, // the team's documents after a hello; the team told when the machine goes
    holders, // held sockets' expiry
    readers,
    viewers,
    logins,
    attempts, // reports the team missed, said again after a hello and on the alarm
  ]; // files, tokens and revocations take part in none of it: only their RPC methods reach them (`parts`)
  const parts = { team, files, readers, viewers, holders, notifications, tokens, revocations, floor, sessions, acp, attempts, previews, logins };
  return { parts, list };
}
