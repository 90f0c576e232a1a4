/**
 * The team's documents (skills, MCP servers, agents, the permission policy) onto one machine (docs/architecture.md, "Team
 * configuration"): each is applied by the sidecar and its outcome recorded at the team, unless nothing
 * changed that the team does not know already. The machine object runs it on a connect and when the
 * team's fan-out hands it new documents; the documents come with the call, so 10,000 machines never
 * ask the team for them.
 */
import type { OpArgs, OpResult } from "@agent-runtime/protocol/ops";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { type RegistryAgent, registryIdOf } from "@agent-runtime/protocol/registry";
import type { Catalog } from "../../agents-registry/catalog";
import type { TeamPolicy } from "@agent-runtime/protocol/policy";
import { type AppliedOutcome, type DocumentKind, documentEtag, type StoredDocument, type TeamDocuments } from "./team-documents";

type ApplyOp = "skills.apply" | "mcp.apply" | "agents.apply";

/** What applying needs of the machine object. */
export interface ConfigHost {
  call<N extends ApplyOp>(op: N, args: OpArgs<N>, timeoutMs?: number): Promise<Outcome<OpResult<N>>>;
  /** The machine whose sidecar is connected now, or null (then the documents are applied when it connects). */
  connectedMachine(): string | null;
  /** The team's object, which records each machine's outcome (its RPC method, by its shape: no import of the object's module). */
  team(): { recordApplied(kind: DocumentKind, machine: string, outcome: AppliedOutcome): Promise<void> };
  /** The deployment's registry catalog: agents install from its entries (the sidecar never reads the registry). */
  catalog(): Promise<Catalog>;
  installTimeoutMs: number;
  /** The machine's object keeps the permission policy itself (no sidecar applies it); true when it changed. */
  keepPolicy(stored: StoredDocument<TeamPolicy>): boolean;
}

/** The versions the team's status shows for this machine (none: it has recorded nothing yet). */
export type RecordedVersions = Record<DocumentKind, string | null>;
export const NOTHING_RECORDED: RecordedVersions = { skills: null, mcp: null, agents: null, policy: null };

export async function applyDocuments(host: ConfigHost, documents: TeamDocuments, recorded: RecordedVersions = NOTHING_RECORDED): Promise<void> {
  const team = host.team();
  await Promise.all([
    applyDocument(
      host,
      documents.skills,
      recorded.skills,
      "skills.apply",
      undefined,
      async (base) => base,
      (machine, outcome) => team.recordApplied("skills", machine, outcome),
    ),
    applyDocument(
      host,
      documents.mcp,
      recorded.mcp,
      "mcp.apply",
      undefined,
      async (base) => base,
      (machine, outcome) => team.recordApplied("mcp", machine, outcome),
    ),
    // Installs take as long as an install may.
    applyDocument(
      host,
      documents.agents,
      recorded.agents,
      "agents.apply",
      host.installTimeoutMs,
      async (base) => ({ ...base, entries: await registryEntriesOf(host, Object.keys(base.config.agents)) }),
      (machine, outcome) => team.recordApplied("agents", machine, outcome),
    ),
    keepPolicy(host, documents.policy, recorded.policy),
  ]);
}

/** The policy, kept by the machine's object; the team hears of it once per version, as of a document applied. */
async function keepPolicy(host: ConfigHost, latest: StoredDocument<TeamPolicy>, recorded: string | null): Promise<void> {
  const machine = host.connectedMachine();
  if (!machine || latest.version === 0) return;
  const etag = documentEtag(latest.version);
  if (!host.keepPolicy(latest) && recorded === etag) return;
  await host.team().recordApplied("policy", machine, { applied: { version: etag, appliedAtMs: Date.now() } });
}

/** The registry's entry for each agent named (by built-in name or registry id), where it has one. */
async function registryEntriesOf(host: ConfigHost, agents: string[]): Promise<Record<string, RegistryAgent>> {
  if (agents.length === 0) return {};
  const { agents: catalog } = await host.catalog();
  const byId = new Map(catalog.map((entry) => [entry.id, entry]));
  return Object.fromEntries(
    agents.flatMap((agent) => {
      const entry = byId.get(registryIdOf(agent));
      return entry ? [[agent, entry]] : [];
    }),
  );
}

/** One document onto the sidecar, and its outcome to the team, unless nothing changed that the team does not know. */
async function applyDocument<N extends ApplyOp>(
  host: ConfigHost,
  latest: StoredDocument<OpArgs<N>["config"]>,
  recorded: string | null,
  op: N,
  /** Unless the operation's deadline. */
  timeoutMs: number | undefined,
  argsOf: (base: { version: string; config: OpArgs<N>["config"] }) => Promise<OpArgs<N>>,
  record: (
    machine: string,
    outcome: { applied: Omit<OpResult<N>, "version" | "unchanged"> & { version: string } } | { error: string; version: number },
  ) => Promise<void>,
): Promise<void> {
  const machine = host.connectedMachine();
  if (!machine || latest.version === 0) return; // applied when the machine connects; never configured: nothing to do
  const outcome = await host.call(op, await argsOf({ version: String(latest.version), config: latest.config }), timeoutMs);
  const etag = documentEtag(latest.version);
  // A reconnect whose apply changed nothing, and whose status the team already holds: no write.
  if (outcome.ok && outcome.value.unchanged && recorded === etag) return;
  if (!outcome.ok) return record(machine, { error: outcome.problem.detail, version: latest.version });
  // The team's status is the sidecar's answer, with the document's ETag as its version.
  const { version: _applied, unchanged: _unchanged, ...status } = outcome.value;
  await record(machine, { applied: { ...status, version: etag } });
}
