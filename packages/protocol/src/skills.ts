/**
 * Skills: the team-wide skills document and what a machine applied of it.
 * One zod schema per resource: the worker validates with it, the sidecar builds its answers to its
 * type, and the OpenAPI document is generated from it.
 */
import { z } from "zod";
import { CONTROL_CHARS, NotOptionLike } from "./values";
import { strictResource } from "./resource";
import { machineStatus, NOT_APPLIED } from "./team-documents";

const SafeRelativePath = z
  .string()
  .min(1)
  .max(512)
  .refine((v) => !CONTROL_CHARS.test(v), "must not contain control characters")
  .refine((v) => !v.startsWith("/") && !/^[A-Za-z]:/.test(v), "must be a relative path")
  .refine((v) => !v.split(/[\\/]/).includes(".."), "must not contain '..'")
  .refine((v) => !/%(2e|2f|5c)/i.test(v), "must not contain percent-encoded dots or slashes")
  .refine((v) => !v.startsWith("-"), "must not start with '-'");

/**
 * Where git may clone from: a URL of a plain transport, scp-style `user@host:path`, or an absolute path.
 * Never git's `<transport>::` helpers (`ext::` runs commands) or anything option-like.
 */
const GIT_SOURCE = /^(?:(?:https?|ssh|git|file):\/\/[^\s]+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+|\/[^\s]*)$/;

/**
 * The user and host of a git URL must not look like options: ssh is handed them as arguments, and
 * `ssh://-oProxyCommand=…/x` would run a command (git refuses it too, but it must not reach git at all).
 */
function gitUserOrHostIsOptionLike(source: string): boolean {
  const url = /^[a-z]+:\/\/([^/]*)/.exec(source);
  const authority = url ? url[1]! : /^([^/:]+):/.exec(source)?.[1];
  if (authority === undefined) return false;
  return authority.split("@").some((part) => part.startsWith("-")) || authority.startsWith("[-");
}

export const SkillName = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "a skill name is a folder name: letters, digits, '.', '_' or '-', not starting with '.' or '-'")
  .refine((v) => !v.includes(".."), "must not contain '..'");

export const SkillSource = z
  .object({
    type: z.enum(["local", "git", "github"]),
    source: NotOptionLike("source"),
    ref: NotOptionLike("ref").optional(),
    skills: z.array(SkillName).max(256).optional(),
    subpath: SafeRelativePath.optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (s.type === "git" && gitUserOrHostIsOptionLike(s.source)) {
      ctx.addIssue({ code: "custom", path: ["source"], message: "the user and host of a git source must not start with '-'" });
    }
    if (s.type === "git" && (!GIT_SOURCE.test(s.source) || s.source.includes("::"))) {
      ctx.addIssue({
        code: "custom",
        path: ["source"],
        message: "a git source is an https://, ssh://, git:// or file:// URL, user@host:path, or an absolute path",
      });
    }
    if (s.type === "github" && (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(s.source) || s.source.split("/").some((part) => part === "." || part === ".."))) {
      ctx.addIssue({ code: "custom", path: ["source"], message: "a github source is 'owner/repo'" });
    }
    if (s.type === "local" && !s.source.startsWith("/") && !s.source.startsWith("~")) {
      ctx.addIssue({ code: "custom", path: ["source"], message: "a local source is an absolute path (or one starting with ~) on each machine" });
    }
    if (s.type === "local" && s.source.split(/[\\/]/).includes("..")) {
      ctx.addIssue({ code: "custom", path: ["source"], message: "must not contain '..'" });
    }
    if (s.type === "local" && s.ref !== undefined) {
      ctx.addIssue({ code: "custom", path: ["ref"], message: "a local source has no ref" });
    }
  })
  .meta({ id: "SkillSource" });
export type SkillSource = z.infer<typeof SkillSource>;

export const SkillsConfig = strictResource("SkillsConfig", { sources: z.array(SkillSource).max(64) });
export type SkillsConfig = z.infer<typeof SkillsConfig>;

export const SkillsMachineStatus = machineStatus(
  "SkillsMachineStatus",
  { version: "the configuration version (ETag) this machine applied last", error: NOT_APPLIED },
  {
    skills: z.array(z.string()).describe("every skill installed on the machine"),
    perAgent: z.record(z.string(), z.array(z.string())).describe("per agent present on the machine: the skills installed in its folder"),
    errors: z.array(z.object({ source: z.string(), error: z.string() })),
  },
);
export type SkillsMachineStatus = z.infer<typeof SkillsMachineStatus>;
