/** The team's skills configuration as stored, and its ETag: shared by the team object, machine objects and routes. */
import type { SkillsConfig } from "../protocol/resources";

export interface StoredSkills {
  /** Increases with every change; the ETag is `"<version>"`. */
  version: number;
  config: SkillsConfig;
  updatedAtMs: number | null;
}

export function skillsEtag(version: number): string {
  return `"${version}"`;
}

/** Does an If-Match header allow writing over this version? (`*`, or one of the listed ETags.) */
export function ifMatchAllows(header: string, version: number): boolean {
  return header
    .split(",")
    .map((t) => t.trim().replace(/^W\//, ""))
    .some((t) => t === "*" || t === skillsEtag(version));
}
