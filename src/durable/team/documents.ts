/**
 * The team's documents in the team object's storage (docs/architecture.md, "Team configuration"): one of
 * each kind per deployment with its version (the ETag), and what each machine last applied of it. Every
 * kind is handled alike through DOCUMENT_REGISTRY.
 */
import {
  type AppliedOutcome,
  DOCUMENT_KINDS,
  DOCUMENT_REGISTRY,
  type DocumentConfigs,
  type DocumentKind,
  documentEtag,
  EMPTY_DOCUMENTS,
  ifMatchAllows,
  type MachineStatusOf,
  type StoredDocument,
  storedDocument,
  type TeamDocuments,
} from "../config/team-documents";
import type { RecordedVersions } from "../config/config-apply";
import { AppliedStatus } from "@agent-runtime/protocol/team-documents";
import { getStored, getStoredMany, listStored, parseStored } from "../storage/stored";

export class TeamDocumentStore {
  constructor(private readonly storage: DurableObjectStorage) {}

  async all(): Promise<TeamDocuments> {
    const stored: Map<string, unknown> = await this.storage.get([...DOCUMENT_KINDS]);
    const read = <K extends DocumentKind>(kind: K): StoredDocument<DocumentConfigs[K]> => {
      const value = stored.get(kind);
      return value === undefined ? EMPTY_DOCUMENTS[kind] : parseStored(storedDocument(DOCUMENT_REGISTRY[kind].config), value, `the team's ${kind} document`);
    };
    return { skills: read("skills"), mcp: read("mcp"), agents: read("agents"), policy: read("policy") };
  }

  /** Replace a document unless `ifMatch` names another version (then: the current one, unchanged). */
  async put<K extends DocumentKind>(
    kind: K,
    config: DocumentConfigs[K],
    ifMatch: string | null,
  ): Promise<{ ok: boolean; stored: StoredDocument<DocumentConfigs[K]> }> {
    const current = (await this.all())[kind];
    if (ifMatch !== null && !ifMatchAllows(ifMatch, current.version)) return { ok: false, stored: current };
    const stored: StoredDocument<DocumentConfigs[K]> = { version: current.version + 1, config, updatedAtMs: Date.now() };
    await this.storage.put(kind, stored);
    return { ok: true, stored };
  }

  /** What a machine applied, or why it did not: then what it applied before stays, with the error. */
  async recordApplied(kind: DocumentKind, machine: string, outcome: AppliedOutcome): Promise<void> {
    const key = statusKey(kind, machine);
    let status: AppliedStatus;
    if ("applied" in outcome) status = { ...outcome.applied, machine, error: null };
    else {
      const previous = await getStored(this.storage, key, DOCUMENT_REGISTRY[kind].status);
      const error = `version ${documentEtag(outcome.version)} not applied: ${outcome.error}`;
      status = {
        ...DOCUMENT_REGISTRY[kind].nothingApplied,
        ...previous,
        machine,
        version: previous?.version ?? null,
        appliedAtMs: previous?.appliedAtMs ?? null,
        error,
      };
    }
    await this.storage.put(key, status);
  }

  /** Per machine, by id: what it applied of a kind. */
  async status<K extends DocumentKind>(kind: K): Promise<MachineStatusOf[K][]> {
    const entries = await listStored(this.storage, `${kind}-status:`, DOCUMENT_REGISTRY[kind].status);
    return [...entries.values()].sort((a, b) => a.machine.localeCompare(b.machine));
  }

  /** The version of each kind a machine applied without an error (null: none recorded). */
  async recordedVersions(machine: string): Promise<RecordedVersions> {
    const stored = await getStoredMany(
      this.storage,
      DOCUMENT_KINDS.map((kind) => statusKey(kind, machine)),
      AppliedStatus,
    );
    const versionOf = (kind: DocumentKind) => {
      const status = stored.get(statusKey(kind, machine));
      return status && status.error === null ? status.version : null;
    };
    return { skills: versionOf("skills"), mcp: versionOf("mcp"), agents: versionOf("agents"), policy: versionOf("policy") };
  }
}

function statusKey(kind: DocumentKind, machine: string): string {
  return `${kind}-status:${machine}`;
}
