/**
 * Safe values: what is checked at the door, before anything reaches a shell, a path or a log.
 * One zod schema per resource: the worker validates with it, the sidecar builds its answers to its
 * type, and the OpenAPI document is generated from it.
 */
import { z } from "zod";

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
export const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

/** `Identifier`'s characters; the relay's hot path checks them without zod (src/http/relay-input.ts). */
export const IDENTIFIER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** An identifier chosen by a client (server ids, machine ids): plain, short, no path or option tricks. */
export const Identifier = z
  .string()
  .min(1)
  .max(128)
  .regex(IDENTIFIER_PATTERN, "must start with a letter or digit and hold only letters, digits, '.', '_' or '-'")
  .refine((v) => v !== "." && v !== ".." && !v.includes(".."), "must not contain '..'");

/**
 * A version selector for npm: an exact semver, a range npm understands, or a dist-tag. Never an option,
 * a URL or a path: a dist-tag holds no dot or slash, since npm reads `good.tgz` or `a/b` as a file or a repository.
 */
export const VersionSpec = z
  .string()
  .min(1)
  .max(64)
  .regex(
    /^(?:[A-Za-z][A-Za-z0-9_-]*|[~^]?v?\d+(?:\.(?:\d+|x|\*)){0,2}(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)$/,
    "must be a semver version (1.2.3, ^1.2) or a dist-tag (latest, next)",
  );

/** The agents this runtime knows without the registry (their registry ids: packages/protocol/src/registry.ts). */
export const BUILTIN_AGENT_IDS = ["claude", "codex", "gemini", "opencode", "pi", "amp", "mock", "mock-login"] as const;

/** `AgentId`'s form; the relay's hot path checks it without zod (src/http/relay-input.ts). */
export const AGENT_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/;

export const AgentId = z
  .string()
  .regex(AGENT_ID_PATTERN, "an agent id: a built-in name (claude, codex, gemini, opencode, pi, amp, mock) or an ACP registry id")
  .meta({ id: "AgentId", description: "claude, codex, gemini, opencode, pi, amp or mock, or any id of the ACP agent registry (claude-acp, codex-acp, …)" });
export type AgentId = z.infer<typeof AgentId>;

/** A value that ends up as an argument (a command, a source): never a control character, never an option. */
export const NotOptionLike = (what: string) =>
  z
    .string()
    .min(1)
    .max(2048)
    .refine((v) => !CONTROL_CHARS.test(v), `${what} must not contain control characters`)
    .refine((v) => !v.startsWith("-"), `${what} must not start with '-'`);

/** A record a client sends, of at most `max` entries (`noun` names them in the refusal: "at most 64 servers"). */
export const BoundedRecord = <K extends z.core.$ZodRecordKey, V extends z.ZodType>(key: K, value: V, max: number, noun: string) =>
  z.record(key, value).refine((r) => Object.keys(r).length <= max, `at most ${max} ${noun}`);
