/**
 * The machine's sandboxes (docs/architecture.md, "Sandboxes"): the owner's limits, what the machine can
 * enforce, and one enclosure per agent process. The spec in force is always the stricter of what the
 * team asked (`acp.post`/`acp.restore`) and the owner's floor; a spec the machine cannot enforce is
 * refused before any process starts.
 */
import { NO_SANDBOX, type MachineSandbox, type SandboxSpec, stricterSandbox } from "@agent-runtime/protocol/sandbox";
import { logger } from "../log";
import type { BlockedConnection } from "./egress-proxy";
import { Enclosure, type EnclosureContext } from "./enclosure";
import { NO_OWNER_LIMITS, type OwnerLimits } from "./owner-limits";
import { assertEnforceable, machineSandbox, probeSandboxTools, type SandboxTools } from "./platform";

const log = logger("sandbox");

/** Something the sandbox refused, for the session's transcript, the audit log and notifications. */
export interface SandboxBlock {
  serverId: string;
  kind: "network";
  /** What was refused, e.g. `CONNECT 127.0.0.1:9` or `GET example.com:80`. */
  target: string;
  reason: string;
  atMs: number;
}

export interface SandboxesOptions {
  limits?: OwnerLimits;
  home: string;
  dataDir: string;
  configDir: string;
  /** Where bwrap and socat are looked for (default: this process's PATH). */
  path?: string;
  isRoot?: boolean;
}

/** The same refusal is reported once in this long per agent (a retrying client would flood the transcript). */
const REPEAT_QUIET_MS = 10_000;

export class Sandboxes {
  readonly limits: OwnerLimits;
  /** Probed once at start; a machine's tools do not change under a running sidecar. */
  readonly ready: Promise<SandboxTools>;
  private tools: SandboxTools | null = null;
  private readonly listeners = new Set<(block: SandboxBlock) => void>();
  private readonly lastSaid = new Map<string, number>();

  constructor(private readonly options: SandboxesOptions) {
    this.limits = options.limits ?? NO_OWNER_LIMITS;
    this.ready = probeSandboxTools(options.path).then((tools) => {
      this.tools = tools;
      if (tools.missing) log.warn(`sandbox: ${tools.missing}`);
      return tools;
    });
  }

  /** What the machine says of its sandbox (null until probed). */
  describe(): MachineSandbox | null {
    return this.tools ? machineSandbox(this.tools, this.limits) : null;
  }

  /** The stricter of what the team asked and the owner's floor; with no request, the floor. */
  effective(requested: SandboxSpec | undefined): SandboxSpec {
    return stricterSandbox(requested ?? NO_SANDBOX, this.limits.floor);
  }

  /** A new agent's enclosure; refused (a problem saying what to install) when the machine cannot enforce it. */
  async enclosure(serverId: string, requested: SandboxSpec | undefined): Promise<Enclosure> {
    const tools = await this.ready;
    const spec = this.effective(requested);
    assertEnforceable(tools, spec);
    const ctx: EnclosureContext = {
      tools,
      home: this.options.home,
      dataDir: this.options.dataDir,
      configDir: this.options.configDir,
      isRoot: this.options.isRoot ?? process.getuid?.() === 0,
    };
    return new Enclosure(spec, ctx, (blocked) => this.blocked(serverId, blocked));
  }

  onBlock(listener: (block: SandboxBlock) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private blocked(serverId: string, blocked: BlockedConnection): void {
    const target = `${blocked.method} ${blocked.host}:${blocked.port}`;
    const key = `${serverId} ${target}`;
    const now = Date.now();
    const last = this.lastSaid.get(key);
    if (last !== undefined && now - last < REPEAT_QUIET_MS) return;
    this.lastSaid.set(key, now);
    if (this.lastSaid.size > 4096) this.lastSaid.delete(this.lastSaid.keys().next().value!);
    log.warn(`${serverId}: sandbox refused ${target}: ${blocked.reason}`);
    const block: SandboxBlock = { serverId, kind: "network", target, reason: blocked.reason, atMs: now };
    for (const listener of this.listeners) listener(block);
  }
}
