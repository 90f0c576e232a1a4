/**
 * One zod schema per resource of the interface. The worker validates with these,
 * the sidecar builds its answers to their types, and the OpenAPI document is
 * generated from them: a shape is written here once and nowhere else.
 */
import { z } from "zod";

// ---------- safe values (checked at the door, before anything reaches a shell or a path) ----------

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

/** An identifier chosen by a client (server ids, machine ids): plain, short, no path or option tricks. */
export const Identifier = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "must start with a letter or digit and hold only letters, digits, '.', '_' or '-'")
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

/** The agents this runtime knows without the registry (their registry ids: src/protocol/registry.ts). */
export const BUILTIN_AGENT_IDS = ["claude", "codex", "gemini", "opencode", "pi", "amp", "mock"] as const;

export const AgentId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, "an agent id: a built-in name (claude, codex, gemini, opencode, pi, amp, mock) or an ACP registry id")
  .meta({ id: "AgentId", description: "claude, codex, gemini, opencode, pi, amp or mock, or any id of the ACP agent registry (claude-acp, codex-acp, …)" });
export type AgentId = z.infer<typeof AgentId>;

// ---------- 2.1 JSON-RPC message ----------

export const JsonRpcId = z.union([z.string(), z.number(), z.null()]);
export type JsonRpcId = z.infer<typeof JsonRpcId>;

export const JsonRpcMessage = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: JsonRpcId.optional(),
    method: z.string().min(1).optional(),
    params: z.unknown().optional(),
    result: z.unknown().optional(),
    error: z.unknown().optional(),
  })
  .passthrough()
  .superRefine((msg, ctx) => {
    const isCall = msg.method !== undefined;
    const isReply = "result" in msg || "error" in msg;
    if (isCall === isReply) {
      ctx.addIssue({ code: "custom", message: "a message has either a method (request, notification) or a result/error (response)", path: ["method"] });
    }
    if ("result" in msg && "error" in msg) {
      ctx.addIssue({ code: "custom", message: "a response has either a result or an error, never both", path: ["error"] });
    }
    if (isReply && (msg.id === undefined || msg.id === null)) {
      ctx.addIssue({ code: "custom", message: "a response needs the id of the request it answers", path: ["id"] });
    }
  })
  .meta({ id: "JsonRpcMessage", description: "One JSON-RPC 2.0 message: request, notification or response." });
export type JsonRpcMessage = z.infer<typeof JsonRpcMessage>;

/** The ACP session an object (a message's params, an answer's result) names, when it names one. */
export function sessionIdIn(value: unknown): string | null {
  if (typeof value !== "object" || value === null) return null;
  const sessionId = (value as { sessionId?: unknown }).sessionId;
  return typeof sessionId === "string" ? sessionId : null;
}

/** A request expects an answer; notifications and responses do not. */
export function isJsonRpcRequest(msg: JsonRpcMessage): boolean {
  return msg.method !== undefined && msg.id !== undefined && msg.id !== null;
}

// ---------- 2.2 / 2.3 install ----------

export const InstallRequest = z
  .object({
    agentVersion: VersionSpec.optional(),
    agentProcessVersion: VersionSpec.optional(),
    reinstall: z.boolean().optional(),
  })
  .strict()
  .meta({ id: "InstallRequest" });
export type InstallRequest = z.infer<typeof InstallRequest>;

export const Artifact = z
  .object({
    kind: z.enum(["native_agent", "agent_process"]),
    path: z.string(),
    source: z.enum(["npm", "builtin", "local_path", "binary", "uvx"]),
    version: z.string(),
  })
  .meta({ id: "Artifact" });
export type Artifact = z.infer<typeof Artifact>;

export const InstallResult = z.object({ already_installed: z.boolean(), artifacts: z.array(Artifact) }).meta({ id: "InstallResult" });
export type InstallResult = z.infer<typeof InstallResult>;

// ---------- 2.4 process ----------

export const ProcessStatus = z.enum(["running", "exited"]);
export const ProcessOwner = z.enum(["user", "system"]);

export const Process = z
  .object({
    id: z.string(),
    command: z.string(),
    args: z.array(z.string()),
    createdAtMs: z.number().int(),
    interactive: z.boolean(),
    tty: z.boolean(),
    owner: ProcessOwner,
    status: ProcessStatus,
    cwd: z.string(),
    pid: z.number().int().nullable(),
    exitCode: z.number().int().nullable().optional(),
    signal: z.string().nullable().optional(),
    exitedAtMs: z.number().int().nullable().optional(),
    label: z.string().optional().describe("what the runtime started it for, e.g. 'acp:my-server'"),
  })
  .meta({ id: "Process" });
export type Process = z.infer<typeof Process>;

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name");
/** An argument or environment value: any text but NUL, which no operating system can pass to a process. */
const ProcessText = z
  .string()
  .max(65536)
  .refine((v) => !v.includes("\u0000"), "must not contain NUL bytes");

export const SpawnRequest = z
  .object({
    command: z
      .string()
      .min(1)
      .max(4096)
      .refine((v) => !CONTROL_CHARS.test(v), "must not contain control characters"),
    args: z.array(ProcessText).max(1024).optional(),
    cwd: z
      .string()
      .min(1)
      .max(4096)
      .refine((v) => !CONTROL_CHARS.test(v), "must not contain control characters")
      .optional(),
    env: z.record(EnvName, ProcessText).optional(),
    tty: z.boolean().optional(),
    interactive: z.boolean().optional(),
  })
  .strict()
  .meta({ id: "SpawnRequest", description: 'Runs `command` with `args` directly (no shell; use ["sh", "-c", …] for one).' });
export type SpawnRequest = z.infer<typeof SpawnRequest>;

/** A one-shot run (`POST /v1/processes/run`): as the sandbox-agent SDK sends it, plus `stdin`. */
export const ProcessRunRequest = z
  .object({
    command: SpawnRequest.shape.command,
    args: SpawnRequest.shape.args,
    cwd: SpawnRequest.shape.cwd.nullable(),
    env: SpawnRequest.shape.env,
    stdin: z
      .string()
      .max(1024 * 1024)
      .optional()
      .describe("written to the process's standard input, which is then closed"),
    timeoutMs: z
      .number()
      .int()
      .min(1)
      .max(24 * 3_600_000)
      .nullable()
      .optional()
      .describe("default and maximum: the machine's /v1/processes/config; the process group is stopped when it passes"),
    maxOutputBytes: z
      .number()
      .int()
      .min(0)
      .max(4 * 1024 * 1024)
      .nullable()
      .optional()
      .describe("per stream; default 1 MiB; what is beyond is not kept"),
  })
  .strict()
  .meta({ id: "ProcessRunRequest", description: "Runs `command` with `args` (no shell) to its end and answers with its output." });
export type ProcessRunRequest = z.infer<typeof ProcessRunRequest>;

export const ProcessRunResponse = z
  .object({
    exitCode: z.number().int().nullable().describe("null when it ended by a signal (see `signal`) or timed out"),
    signal: z.string().nullable(),
    stdout: z.string(),
    stderr: z.string(),
    stdoutTruncated: z.boolean(),
    stderrTruncated: z.boolean(),
    timedOut: z.boolean(),
    durationMs: z.number().int(),
  })
  .meta({ id: "ProcessRunResponse" });
export type ProcessRunResponse = z.infer<typeof ProcessRunResponse>;

/** The limits a machine enforces on processes (`/v1/processes/config`), with the sandbox-agent SDK's names. */
export const ProcessConfig = z
  .object({
    maxConcurrentProcesses: z.number().int().min(1).max(10_000),
    maxInputBytesPerRequest: z
      .number()
      .int()
      .min(1)
      .max(8 * 1024 * 1024),
    maxLogBytesPerProcess: z
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024 * 1024),
    maxOutputBytes: z
      .number()
      .int()
      .min(0)
      .max(4 * 1024 * 1024),
    defaultRunTimeoutMs: z
      .number()
      .int()
      .min(1)
      .max(24 * 3_600_000),
    maxRunTimeoutMs: z
      .number()
      .int()
      .min(1)
      .max(24 * 3_600_000),
    maxExitedKept: z.number().int().min(0).max(100_000),
  })
  .meta({ id: "ProcessConfig" });
export type ProcessConfig = z.infer<typeof ProcessConfig>;

/** A change of some of those limits; what is not named stays as it is. */
export const ProcessConfigUpdate = ProcessConfig.partial().strict().meta({ id: "ProcessConfigUpdate" });

/** A terminal's size, in characters (`POST /v1/processes/{id}/terminal/resize`). */
export const TerminalSize = z
  .object({ cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(1000) })
  .strict()
  .meta({ id: "TerminalSize" });

export const ProcessInput = z
  .object({
    data: z.string(),
    encoding: z.enum(["base64", "utf8"]).optional().describe("how `data` is encoded; base64 by default (as the sandbox-agent SDK sends it)"),
    eof: z.boolean().optional().describe("close the process's stdin after writing"),
  })
  .strict()
  .meta({ id: "ProcessInput" });

/** Where output came from: a pipe's stdout or stderr, or a terminal's one stream (`pty`). */
export const LogStream = z.enum(["stdout", "stderr", "pty"]);

/**
 * One piece of a process's output, as the sandbox-agent SDK reads it. Output that is valid UTF-8 is
 * `utf8` text; anything else is `base64`, so binary output survives byte for byte.
 */
export const LogEntry = z
  .object({
    sequence: z.number().int(),
    timestampMs: z.number().int(),
    stream: LogStream,
    encoding: z.enum(["utf8", "base64"]),
    data: z.string(),
  })
  .meta({ id: "LogEntry" });
export type LogEntry = z.infer<typeof LogEntry>;

export const ProcessLogs = z
  .object({
    processId: z.string(),
    stream: z.enum(["stdout", "stderr", "pty", "combined"]),
    entries: z.array(LogEntry),
    nextSeq: z.number().int().describe("the sequence the next entry will have"),
    droppedThrough: z.number().int().describe("entries up to this sequence were dropped (the per-process limit)"),
  })
  .meta({ id: "ProcessLogs" });
export type ProcessLogs = z.infer<typeof ProcessLogs>;

export const ProcessList = z.object({ processes: z.array(Process) }).meta({ id: "ProcessList" });
export type ProcessList = z.infer<typeof ProcessList>;

// ---------- 2.5 / 2.6 agent info ----------

export const CAPABILITY_NAMES = [
  "commandExecution",
  "errorEvents",
  "fileAttachments",
  "fileChanges",
  "images",
  "itemStarted",
  "mcpTools",
  "permissions",
  "planMode",
  "questions",
  "reasoning",
  "sessionLifecycle",
  "sharedProcess",
  "status",
  "streamingDeltas",
  "textMessages",
  "toolCalls",
  "toolResults",
] as const;
export type CapabilityName = (typeof CAPABILITY_NAMES)[number];

export const Capabilities = z
  .object(Object.fromEntries(CAPABILITY_NAMES.map((n) => [n, z.boolean()])) as Record<CapabilityName, z.ZodBoolean>)
  .meta({ id: "Capabilities" });
export type Capabilities = z.infer<typeof Capabilities>;

/** What an agent known only from the registry can do is not known before a session asks it (initialize). */
export const UNKNOWN_CAPABILITIES = Object.fromEntries(CAPABILITY_NAMES.map((n) => [n, false])) as Capabilities;

export const ServerStatus = z
  .object({ status: z.enum(["running", "stopped"]), uptimeMs: z.number().int().nullable(), servers: z.number().int() })
  .meta({ id: "ServerStatus" });

/** What the ACP registry says of an agent, beside what the machine has (GET /v1/agents). */
export const AgentRegistryInfo = z
  .object({
    id: z.string().describe("its registry id"),
    version: z.string().describe("the version the registry offers"),
    distributions: z.array(z.enum(["npx", "binary", "uvx"])),
    installable: z.boolean().describe("this machine can install it (a build for its platform, or npx/uvx)"),
    reason: z.string().nullable().describe("why not, when it cannot"),
  })
  .meta({ id: "AgentRegistryInfo" });
export type AgentRegistryInfo = z.infer<typeof AgentRegistryInfo>;

export const AgentInfo = z
  .object({
    id: AgentId,
    name: z.string().optional(),
    description: z.string().optional(),
    installed: z.boolean(),
    installedVersion: z.string().nullable().optional().describe("the version installed, as recorded when it was"),
    registry: AgentRegistryInfo.nullable().optional().describe("the registry's entry, when the registry lists this agent"),
    updateAvailable: z.boolean().nullable().optional().describe("the registry offers another version than the one installed (null: not comparable)"),
    credentialsAvailable: z.boolean(),
    capabilities: Capabilities,
    configError: z.string().nullable().optional(),
    configOptions: z.array(z.unknown()).nullable().optional(),
    path: z.string().nullable().optional(),
    version: z.string().nullable().optional(),
    serverStatus: ServerStatus.optional(),
  })
  .meta({ id: "AgentInfo" });
export type AgentInfo = z.infer<typeof AgentInfo>;

export const AgentList = z
  .object({
    agents: z.array(AgentInfo),
    platform: z.string().optional().describe("the machine's platform as Node names it (linux-x64, darwin-arm64, …)"),
    registry: z
      .object({
        url: z.string(),
        source: z.enum(["registry", "cache", "stale", "builtin"]),
        fetchedAtMs: z.number().int().nullable(),
        error: z.string().nullable(),
      })
      .optional()
      .describe("where the registry entries came from: read now, kept, kept while the registry is unreachable, or the built-in list"),
  })
  .meta({ id: "AgentList" });

// ---------- 2.7 skills ----------

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

const NotOptionLike = (what: string) =>
  z
    .string()
    .min(1)
    .max(2048)
    .refine((v) => !CONTROL_CHARS.test(v), `${what} must not contain control characters`)
    .refine((v) => !v.startsWith("-"), `${what} must not start with '-'`);

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

export const SkillsConfig = z
  .object({ sources: z.array(SkillSource).max(64) })
  .strict()
  .meta({ id: "SkillsConfig" });
export type SkillsConfig = z.infer<typeof SkillsConfig>;

export const SkillsMachineStatus = z
  .object({
    machine: z.string(),
    version: z.string().nullable().describe("the configuration version (ETag) this machine applied last"),
    appliedAtMs: z.number().int().nullable(),
    skills: z.array(z.string()).describe("every skill installed on the machine"),
    perAgent: z.record(z.string(), z.array(z.string())).describe("per agent present on the machine: the skills installed in its folder"),
    errors: z.array(z.object({ source: z.string(), error: z.string() })),
    error: z.string().nullable().describe("why the last apply did not happen at all (e.g. the machine was offline)"),
  })
  .meta({ id: "SkillsMachineStatus" });
export type SkillsMachineStatus = z.infer<typeof SkillsMachineStatus>;

// ---------- beyond the document: machines and ACP servers ----------

export const Machine = z
  .object({
    id: z.string(),
    connected: z.boolean(),
    connectedAtMs: z.number().int().nullable(),
    lastSeenMs: z.number().int().nullable().describe("when its sidecar last connected or disconnected"),
    sidecarVersion: z.string().nullable(),
    sidecarOutdated: z.boolean().describe("older than the sidecar released with this worker: upgrade it"),
    platform: z.string().nullable(),
  })
  .meta({ id: "Machine" });
export type Machine = z.infer<typeof Machine>;

export const MachineList = z
  .object({ machines: z.array(Machine), nextAfter: z.string().nullable().describe("pass as ?after= for the next page; null on the last") })
  .meta({ id: "MachineList" });

export const AcpServer = z
  .object({ serverId: z.string(), agent: AgentId, createdAtMs: z.number().int(), processId: z.string().optional() })
  .meta({ id: "AcpServer" });
export type AcpServer = z.infer<typeof AcpServer>;

export const AcpServerList = z.object({ servers: z.array(AcpServer) }).meta({ id: "AcpServerList" });
export type AcpServerList = z.infer<typeof AcpServerList>;

// ---------- trust: API tokens, machine tokens, the audit log (docs/architecture.md, "Trust") ----------

/** What a token may do: viewers read, members also act on the machines in their scope, admins manage the team too. */
export const Role = z.enum(["viewer", "member", "admin"]).meta({ id: "Role" });
export type Role = z.infer<typeof Role>;

/** The machines a token may reach: a list of machine ids, or every machine. */
export const MachineScope = z.union([z.literal("*"), z.array(Identifier).min(1).max(256)]).meta({ id: "MachineScope" });
export type MachineScope = z.infer<typeof MachineScope>;

const TokenName = z
  .string()
  .min(1)
  .max(80)
  .refine((v) => !CONTROL_CHARS.test(v), "must not contain control characters")
  .describe("who or what holds the token (shown in the audit log)");

/** At most ten years: a token that should never expire has no expiry. */
const ExpiresIn = z
  .number()
  .int()
  .min(1)
  .max(10 * 365 * 86_400);

export const TokenCreateRequest = z
  .object({
    name: TokenName,
    role: Role,
    machines: MachineScope.optional().describe("default '*' (every machine)"),
    expiresInSeconds: ExpiresIn.optional().describe("omitted: never expires"),
  })
  .strict()
  .meta({ id: "TokenCreateRequest" });
export type TokenCreateRequest = z.infer<typeof TokenCreateRequest>;

export const TokenInfo = z
  .object({
    id: z.string(),
    name: z.string(),
    role: Role,
    machines: MachineScope,
    createdAtMs: z.number().int(),
    createdBy: z.string(),
    expiresAtMs: z.number().int().nullable(),
    lastUsedMs: z.number().int().nullable().describe("recorded at most once a minute"),
    revokedAtMs: z.number().int().nullable(),
  })
  .meta({ id: "TokenInfo" });
export type TokenInfo = z.infer<typeof TokenInfo>;

export const TokenCreated = TokenInfo.extend({ token: z.string().describe("the secret: shown this once, stored only as a hash") }).meta({ id: "TokenCreated" });
export const TicketCreated = z
  .object({ ticket: z.string().describe("for ?access_token= on WebSocket and SSE GETs only"), expiresAtMs: z.number().int() })
  .meta({ id: "TicketCreated" });

export const TokenList = z.object({ tokens: z.array(TokenInfo) }).meta({ id: "TokenList" });

export const Whoami = z
  .object({ name: z.string(), role: Role, machines: MachineScope, tokenId: z.string().nullable(), expiresAtMs: z.number().int().nullable() })
  .meta({ id: "Whoami" });
export type Whoami = z.infer<typeof Whoami>;

export const MachineTokenRequest = z
  .object({ machine: Identifier, expiresInSeconds: ExpiresIn.optional().describe("omitted: never expires") })
  .strict()
  .meta({ id: "MachineTokenRequest" });

export const MachineTokenMinted = z
  .object({
    machine: z.string(),
    token: z.string().describe("the machine token: shown this once"),
    generation: z.number().int(),
    expiresAtMs: z.number().int().nullable(),
    connectCommand: z.string().describe("run on the machine: stores the token (0600) and connects"),
  })
  .meta({ id: "MachineTokenMinted" });

export const MachineTokensRevoked = z
  .object({ machine: z.string(), generation: z.number().int().describe("tokens of older generations are refused from now on") })
  .meta({ id: "MachineTokensRevoked" });

export const AuditEntry = z
  .object({
    seq: z.number().int(),
    atMs: z.number().int(),
    token: z.string().describe("the token's name, or what was presented when it was refused"),
    role: Role.nullable(),
    method: z.string(),
    route: z.string().describe("the route pattern, e.g. /v1/processes/{id}/kill"),
    machine: z.string().nullable(),
    status: z.number().int(),
  })
  .meta({ id: "AuditEntry" });
export type AuditEntry = z.infer<typeof AuditEntry>;

export const AuditPage = z
  .object({ entries: z.array(AuditEntry), nextBefore: z.number().int().nullable().describe("pass as ?before= for the next (older) page") })
  .meta({ id: "AuditPage" });
export type AuditPage = z.infer<typeof AuditPage>;

export const AuditQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).optional(),
  before: z.coerce.number().int().min(1).optional(),
  token: z.string().max(80).optional(),
  machine: Identifier.optional(),
  status: z.coerce.number().int().min(100).max(599).optional(),
  sinceMs: z.coerce.number().int().min(0).optional(),
});
export type AuditQuery = z.infer<typeof AuditQuery>;

// ---------- files on a machine (docs/architecture.md, "Files"; shapes as the sandbox-agent SDK reads them) ----------

/**
 * A path on the machine. Absolute by design (the caller is trusted with the machine); a relative path or
 * `~/…` is taken from the sidecar's HOME, as sandbox-agent does. `..` segments are refused: a path must
 * say what it means, not lean on how the machine's links resolve.
 */
export const MachinePath = z
  .string()
  .min(1, "must not be empty")
  .max(4096)
  .refine((v) => !v.includes("\u0000"), "must not contain NUL bytes")
  .refine((v) => !v.split("/").includes(".."), "must not contain '..' segments")
  .describe("a path on the machine: absolute, or relative to the sidecar's HOME");

export const FsEntryType = z.enum(["file", "directory"]).meta({ id: "FsEntryType" });

export const FsStat = z
  .object({
    path: z.string().describe("absolute"),
    entryType: FsEntryType,
    size: z.number().int().min(0),
    modified: z.string().nullable().optional().describe("RFC 3339"),
  })
  .meta({ id: "FsStat" });
export type FsStat = z.infer<typeof FsStat>;

export const FsEntry = FsStat.extend({ name: z.string() }).meta({ id: "FsEntry" });
export type FsEntry = z.infer<typeof FsEntry>;

export const FsPathQuery = z.object({ path: MachinePath });
export const FsEntriesQuery = z.object({ path: MachinePath.optional().describe("the folder (default: HOME)") });
export const FsDeleteQuery = z.object({
  path: MachinePath,
  recursive: z
    .enum(["true", "false", "1", "0"])
    .optional()
    .transform((v) => v === "true" || v === "1")
    .describe("delete a folder with everything in it"),
});

export const FsActionResponse = z.object({ path: z.string() }).meta({ id: "FsActionResponse" });
export const FsWriteResponse = z.object({ path: z.string(), bytesWritten: z.number().int().min(0) }).meta({ id: "FsWriteResponse" });
export type FsWriteResponse = z.infer<typeof FsWriteResponse>;

export const FsMoveRequest = z
  .object({ from: MachinePath, to: MachinePath, overwrite: z.boolean().nullable().optional().describe("replace what is at `to` (409 otherwise)") })
  .meta({ id: "FsMoveRequest" });
export const FsMoveResponse = z.object({ from: z.string(), to: z.string() }).meta({ id: "FsMoveResponse" });

export const FsUploadBatchResponse = z
  .object({
    paths: z.array(z.string()).describe("what was written (the first 1,024)"),
    truncated: z.boolean().describe("true when more than 1,024 entries were written"),
  })
  .meta({ id: "FsUploadBatchResponse" });
export type FsUploadBatchResponse = z.infer<typeof FsUploadBatchResponse>;

// ---------- MCP servers (docs/architecture.md, "Team configuration": a team-wide document, and per-directory entries on one machine) ----------

export const McpName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, "an MCP server name: letters, digits, '_' or '-', starting with a letter or digit");

const StringMap = z.record(z.string().min(1).max(256), z.string().max(8192));

/** One MCP server, as the sandbox-agent SDK describes it: a local command, or a remote URL. */
export const McpServerConfig = z
  .discriminatedUnion("type", [
    z.object({
      type: z.literal("local"),
      command: NotOptionLike("command").describe("the executable"),
      args: z.array(z.string().max(8192)).max(256).optional(),
      env: StringMap.nullable().optional(),
      cwd: z.string().max(4096).nullable().optional(),
      enabled: z.boolean().nullable().optional(),
      timeoutMs: z.number().int().min(1).nullable().optional(),
    }),
    z.object({
      type: z.literal("remote"),
      url: z.url({ protocol: /^https?$/ }),
      transport: z.enum(["http", "sse"]).nullable().optional(),
      headers: StringMap.nullable().optional(),
      bearerTokenEnvVar: z.string().max(256).nullable().optional(),
      envHeaders: StringMap.nullable().optional(),
      oauth: z
        .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.string())]))
        .nullable()
        .optional()
        .describe("OAuth settings (client id, scopes, …), passed on as they are"),
      enabled: z.boolean().nullable().optional(),
      timeoutMs: z.number().int().min(1).nullable().optional(),
    }),
  ])
  .meta({ id: "McpServerConfig" });
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/** The team's MCP document: servers by name, written where each installed agent reads its MCP servers. */
export const McpConfig = z
  .object({
    servers: z
      .record(McpName, McpServerConfig)
      .refine((s) => Object.keys(s).length <= 64, "at most 64 servers")
      .describe("by name"),
  })
  .strict()
  .meta({ id: "McpConfig" });
export type McpConfig = z.infer<typeof McpConfig>;

export const McpMachineStatus = z
  .object({
    machine: z.string(),
    version: z.string().nullable().describe("the document version (ETag) this machine applied last"),
    appliedAtMs: z.number().int().nullable(),
    servers: z.array(z.string()).describe("the servers written for at least one agent"),
    perAgent: z.record(z.string(), z.array(z.string())).describe("per agent installed on the machine: the servers in its configuration file"),
    errors: z.array(z.object({ agent: z.string(), error: z.string() })),
    error: z.string().nullable().describe("why the last apply did not happen at all (e.g. the machine was offline)"),
  })
  .meta({ id: "McpMachineStatus" });
export type McpMachineStatus = z.infer<typeof McpMachineStatus>;
