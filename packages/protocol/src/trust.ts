/**
 * Trust: API tokens, machine tokens and the audit log (docs/architecture.md, "Trust").
 * One zod schema per resource: the worker validates with it, the sidecar builds its answers to its
 * type, and the OpenAPI document is generated from it.
 */
import { z } from "zod";
import { CONTROL_CHARS, Identifier } from "./values";
import { resource, strictResource } from "./resource";

/** What a token may do: viewers read, members also act on the machines in their scope, admins manage the team too. */
export const Role = z.enum(["viewer", "member", "admin"]).meta({ id: "Role" });
export type Role = z.infer<typeof Role>;

export { roleAllows } from "./roles";

/** The machines a token may reach: a list of machine ids, or every machine. */
export const MachineScope = z.union([z.literal("*"), z.array(Identifier).min(1).max(256)]).meta({ id: "MachineScope" });
export type MachineScope = z.infer<typeof MachineScope>;

/**
 * Does scope `outer` cover all of `inner`? Only `*` covers `*`: a scope can hand on what it holds, never
 * more (docs/architecture.md, "Trust").
 */
export function scopeCovers(outer: MachineScope, inner: MachineScope): boolean {
  if (outer === "*") return true;
  return inner !== "*" && inner.every((m) => outer.includes(m));
}

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

export const TokenCreateRequest = strictResource("TokenCreateRequest", {
  name: TokenName,
  role: Role,
  machines: MachineScope.optional().describe("default '*' (every machine)"),
  expiresInSeconds: ExpiresIn.optional().describe("omitted: never expires"),
});
export type TokenCreateRequest = z.infer<typeof TokenCreateRequest>;

export const TokenInfo = resource("TokenInfo", {
  id: z.string(),
  name: z.string(),
  role: Role,
  machines: MachineScope,
  createdAtMs: z.number().int(),
  createdBy: z.string(),
  expiresAtMs: z.number().int().nullable(),
  lastUsedMs: z.number().int().nullable().describe("recorded at most once a minute"),
  revokedAtMs: z.number().int().nullable(),
});
export type TokenInfo = z.infer<typeof TokenInfo>;

export const TokenCreated = TokenInfo.extend({ token: z.string().describe("the secret: shown this once, stored only as a hash") }).meta({ id: "TokenCreated" });
export const TicketCreated = resource("TicketCreated", {
  ticket: z.string().describe("for ?access_token= on WebSocket and SSE GETs only"),
  expiresAtMs: z.number().int(),
});

export const TokenList = resource("TokenList", { tokens: z.array(TokenInfo) });

export const Whoami = resource("Whoami", {
  name: z.string(),
  role: Role,
  machines: MachineScope,
  tokenId: z.string().nullable(),
  expiresAtMs: z.number().int().nullable(),
});
export type Whoami = z.infer<typeof Whoami>;

export const MachineTokenRequest = strictResource("MachineTokenRequest", {
  machine: Identifier,
  expiresInSeconds: ExpiresIn.optional().describe("omitted: never expires"),
});

export const MachineTokenMinted = resource("MachineTokenMinted", {
  machine: z.string(),
  token: z.string().describe("the machine token: shown this once"),
  generation: z.number().int(),
  expiresAtMs: z.number().int().nullable(),
  connectCommand: z.string().describe("run on the machine: stores the token (0600) and connects"),
});

export const MachineTokensRevoked = resource("MachineTokensRevoked", {
  machine: z.string(),
  generation: z.number().int().describe("tokens of older generations are refused from now on"),
});

export const AuditEntry = resource("AuditEntry", {
  seq: z.number().int(),
  atMs: z.number().int(),
  token: z.string().describe("the token's name, or what was presented when it was refused"),
  role: Role.nullable(),
  method: z.string(),
  route: z.string().describe("the route pattern, e.g. /v1/processes/{id}/kill"),
  machine: z.string().nullable(),
  status: z.number().int(),
});
export type AuditEntry = z.infer<typeof AuditEntry>;

export const AuditPage = resource("AuditPage", {
  entries: z.array(AuditEntry),
  nextBefore: z.number().int().nullable().describe("pass as ?before= for the next (older) page"),
});
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
