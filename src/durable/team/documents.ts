/**
 * The team's documents in the team object's storage (docs/architecture.md, "Team configuration"): one of
 * each kind per deployment with its version (the ETag), and what each machine last applied of it. Every
 * kind is handled alike through DOCUMENT_REGISTRY.
 */
import {
  type AppliedOutcome,
  type AppliedStatus,
  DOCUMENT_KINDS,
  DOCUMENT_REGISTRY,
  type DocumentKind,
  documentEtag,
  EMPTY_DOCUMENTS,
  ifMatchAllows,
  type MachineStatusOf,
  type TeamDocuments,
} from "../config/team-documents";
import type { RecordedVersions } from "../config/config-apply";

export class TeamDocumentStore {
  constructor(private readonly storage: DurableObjectStorage) {}

  async all(): Promise<TeamDocuments> {
    const stored = await this.storage.get<TeamDocuments[DocumentKind]>([...DOCUMENT_KINDS]);
    return Object.fromEntries(DOCUMENT_KINDS.map((kind) => [kind, stored.get(kind) ?? EMPTY_DOCUMENTS[kind]])) as unknown as TeamDocuments;
  }

  /** Replace a document unless `ifMatch` names another version (then: the current one, unchanged). */
  async put<K extends DocumentKind>(kind: K, config: TeamDocuments[K]["config"], ifMatch: string | null): Promise<{ ok: boolean; stored: TeamDocuments[K] }> {
    const current = (await this.all())[kind];
    if (ifMatch !== null && !ifMatchAllows(ifMatch, current.version)) return { ok: false, stored: current };
    const stored = { version: current.version + 1, config, updatedAtMs: Date.now() } as TeamDocuments[K];
    await this.storage.put(kind, stored);
    return { ok: true, stored };
  }

  /** What a machine applied, or why it did not: then what it applied before stays, with the error. */
  async recordApplied(kind: DocumentKind, machine: string, outcome: AppliedOutcome): Promise<void> {
    const key = statusKey(kind, machine);
    let status: AppliedStatus;
    if ("applied" in outcome) status = { ...outcome.applied, machine, error: null };
    else {
      const previous = await this.storage.get<AppliedStatus>(key);
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
    const entries = await this.storage.list<MachineStatusOf[K]>({ prefix: `${kind}-status:` });
    return [...entries.values()].sort((a, b) => a.machine.localeCompare(b.machine));
  }

  /** The version of each kind a machine applied without an error (null: none recorded). */
  async recordedVersions(machine: string): Promise<RecordedVersions> {
    const stored = await this.storage.get<AppliedStatus>(DOCUMENT_KINDS.map((kind) => statusKey(kind, machine)));
    const versionOf = (kind: DocumentKind) => {
      const status = stored.get(statusKey(kind, machine));
      return status && status.error === null ? status.version : null;
    };
    return Object.fromEntries(DOCUMENT_KINDS.map((kind) => [kind, versionOf(kind)])) as RecordedVersions;
  }
}

function statusKey(kind: DocumentKind, machine: string): string {
  return `${kind}-status:${machine}`;
}
