/** The team's skills (docs/architecture.md, "Team configuration"): one document per deployment, applied on every machine; per-folder entries on one machine. */
import { relay } from "../http/machine";
import { SkillName, SkillsConfig, SkillsMachineStatus } from "@agent-runtime/protocol/skills";
import { teamDocumentRoutes } from "./team-documents";

export const skillsRoutes = teamDocumentRoutes({
  kind: "skills",
  title: "skills configuration",
  document: SkillsConfig,
  status: SkillsMachineStatus,
  perDirectory: {
    nameParam: "skillName",
    name: SkillName,
    entry: SkillsConfig,
    get: (c, directory, name) => relay(c, "skills.entry.get", { directory, name }),
    // The folder's skills are installed (cloned, copied) before this answers.
    put: async (c, directory, name, config) => void (await relay(c, "skills.entry.put", { directory, name, config })),
    delete: async (c, directory, name) => void (await relay(c, "skills.entry.delete", { directory, name })),
  },
});
