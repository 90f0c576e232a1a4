/**
 * What a machine's object says to the team's object, and when (docs/architecture.md, "Idle cost"): one
 * call when its sidecar connects (recorded, and answered with the team's documents and subscriptions),
 * one when it goes, once in its life that it has records to list, and each document applied. Never per
 * request or per message.
 */
import type { MachineSandbox } from "@agent-runtime/protocol/sandbox";
import type { OpArgs, OpResult } from "@agent-runtime/protocol/ops";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { Env } from "../../env";
import { settings } from "../../settings";
import { deploymentCatalog } from "../../agents-registry/deployment";
import { applyDocuments, type ConfigHost, type RecordedVersions } from "../config/config-apply";
import type { TeamDocuments } from "../config/team-documents";
import { teamStub } from "../stubs";
import { getStored } from "../storage/stored";
import { z } from "zod";
import type { Back, MachineFeature, Registered } from "./feature";

type ApplyOp = "skills.apply" | "mcp.apply" | "agents.apply";

export interface MachineTeamHost {
  env: Env;
  storage: DurableObjectStorage;
  waitUntil(work: Promise<unknown>): void;
  /** The machine this object holds. */
  machine(): string;
  /** The machine whose sidecar is connected now, or null. */
  connectedMachine(): string | null;
  call<N extends ApplyOp>(op: N, args: OpArgs<N>, timeoutMs?: number): Promise<Outcome<OpResult<N>>>;
  /** The permission policy, kept by this object (true when it changed). */
  keepPolicy: ConfigHost["keepPolicy"];
}

export class MachineTeam implements MachineFeature {
  /** Whether the team knows this machine has records (sessions, deliveries) to list: asked of storage once. */
  private recordsAnnounced: boolean | null = null;

  constructor(private readonly host: MachineTeamHost) {}

  /** The sidecar said hello: the team records it and answers with its documents (null when the team could not be reached). */
  async register(
    tunnel: { machine: string; connectedAtMs: number },
    hello: { sidecarVersion: string; platform: string; sandbox?: MachineSandbox | undefined },
  ): Promise<Registered | null> {
    return teamStub(this.host.env)
      .machineConnected({
        id: tunnel.machine,
        connectedAtMs: tunnel.connectedAtMs,
        sidecarVersion: hello.sidecarVersion,
        platform: hello.platform,
        sandbox: hello.sandbox ?? null,
      })
      .catch((err: unknown) => {
        console.error(`machine '${tunnel.machine}' connected but the team did not record it:`, err);
        return null;
      });
  }

  async disconnected(machine: string): Promise<void> {
    await teamStub(this.host.env).machineDisconnected(machine, Date.now());
  }

  /** Every machine gets the team's documents when it connects (the sidecar skips a version it applied already). */
  resumed({ registered }: Back): void {
    if (registered) this.host.waitUntil(this.applyDocuments(registered.documents, registered.recorded));
  }

  async gone(machine: string | null): Promise<void> {
    if (machine) await this.disconnected(machine);
  }

  /**
   * Once per machine: the team lists sessions and deliveries only of machines that have some (so this is
   * not per session, nor per message).
   */
  announceRecords(): void {
    this.host.waitUntil(
      (async () => {
        this.recordsAnnounced ??= (await getStored(this.host.storage, "records-announced", z.boolean())) === true;
        if (this.recordsAnnounced) return;
        await teamStub(this.host.env).machineHasSessions(this.host.machine());
        this.recordsAnnounced = true;
        await this.host.storage.put("records-announced", true);
      })().catch((err: unknown) => console.error("the team did not record that this machine has sessions:", err)),
    );
  }

  /** The team's documents onto this machine, each outcome recorded at the team (config/config-apply.ts). */
  applyDocuments(documents: TeamDocuments, recorded?: RecordedVersions): Promise<void> {
    const { env } = this.host;
    return applyDocuments(
      {
        call: (op, args, timeoutMs) => this.host.call(op, args, timeoutMs),
        connectedMachine: () => this.host.connectedMachine(),
        team: () => teamStub(env),
        catalog: () => deploymentCatalog(env),
        installTimeoutMs: settings(env).installTimeoutMs,
        keepPolicy: this.host.keepPolicy,
      },
      documents,
      recorded,
    );
  }
}
