/** Tokens, machine tokens and the audit log (docs/architecture.md, "Trust"). */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { machineObject, teamStub, tokenStub } from "../durable/stubs";
import type { StoredToken } from "../durable/tokens/token";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import type { Identity } from "../lib/identity";
import { bounded } from "../http/bounded";
import { settings } from "../settings";
import { machineKnown, reachMachine, scopeAllows, scopeCovers } from "../http/access";
import { sidecarPackageUrl } from "./sidecar-package";
import { json, jsonBody } from "../http/openapi";
import { newApiToken, sha256Hex } from "../lib/secrets";
import { mintTicket } from "../http/tickets";
import { signIn, signOut } from "../http/signin";
import { mintMachineToken } from "@agent-runtime/protocol/machine-token";
import { ProblemError } from "@agent-runtime/protocol/problems";
import {
  AuditPage,
  AuditQuery,
  MachineTokenMinted,
  MachineTokenRequest,
  MachineTokensRevoked,
  TicketCreated,
  TokenCreated,
  TokenCreateRequest,
  TokenInfo,
  TokenList,
  Whoami,
} from "@agent-runtime/protocol/trust";
import { Identifier } from "@agent-runtime/protocol/values";

const ADMIN = { role: "admin", machine: false } as const;

const whoami = apiRoute("get", "/whoami", {
  summary: "Who this token is: name, role, machine scope",
  access: { role: "viewer", machine: false },
  answers: { 200: json(Whoami, "the caller") },
});

const createTicket = apiRoute("post", "/tickets", {
  summary: "A one-minute ticket for `?access_token=` on WebSocket and SSE GETs (what a browser uses instead of its token in a URL)",
  access: { role: "viewer", machine: false },
  answers: { 201: json(TicketCreated, "the ticket") },
});

const openSignin = apiRoute("post", "/signin", {
  summary: "Trade the token for the dashboard's sign-in cookie (HttpOnly, Secure, SameSite=Strict; 30 days or the token's expiry)",
  access: { role: "viewer", machine: false },
  answers: { 201: json(z.object({ name: z.string(), role: z.string(), expiresAtMs: z.number() }), "signed in: the cookie is set") },
});

const closeSignin = apiRoute("delete", "/signin", {
  summary: "Sign out: the cookie's sign-in ends (it is refused from now on) and the cookie is cleared",
  access: { role: "viewer", machine: false },
  answers: { 204: { description: "signed out" } },
});

const createToken = apiRoute("post", "/tokens", {
  summary: "Issue an API token; its secret is in this answer only",
  access: ADMIN,
  request: { body: jsonBody(TokenCreateRequest) },
  answers: { 201: json(TokenCreated, "the token, with its secret") },
  problems: ["conflict"],
});

const listTokens = apiRoute("get", "/tokens", {
  summary: "Every issued token (never its secret), oldest first",
  access: ADMIN,
  answers: { 200: json(TokenList, "tokens") },
});

const revokeToken = apiRoute("delete", "/tokens/{id}", {
  summary: "Revoke a token: refused from the next request on",
  access: ADMIN,
  request: { params: z.object({ id: z.string().regex(/^[0-9a-f]{16}$/, "a token id") }) },
  answers: { 200: json(TokenInfo, "the revoked token") },
  problems: ["not_found"],
});

const audit = apiRoute("get", "/audit", {
  summary: "The audit log, newest first: every mutating call and every refused token",
  access: ADMIN,
  request: { query: AuditQuery },
  answers: { 200: json(AuditPage, "one page of entries") },
});

const mintMachine = apiRoute("post", "/machine-tokens", {
  summary: "Mint a machine token (for a sidecar to connect as that machine), with the command that connects it",
  access: ADMIN,
  request: { body: jsonBody(MachineTokenRequest) },
  answers: { 201: json(MachineTokenMinted, "the token: shown this once") },
});

const revokeMachine = apiRoute("delete", "/machine-tokens/{machine}", {
  summary: "Revoke every token of one machine: its sidecar is disconnected and refused at its next connect; other machines are untouched",
  access: ADMIN,
  request: { params: z.object({ machine: Identifier }) },
  answers: { 200: json(MachineTokensRevoked, "the new generation") },
  problems: ["not_found"],
});

/**
 * A shell line that stores the token (0600) and connects; the token goes through a pipe, never an argument.
 * The sidecar comes from this worker (its own version), not from a registry.
 */
function connectCommand(url: string, machine: string, token: string): string {
  const sidecar = `npx -y --package='${sidecarPackageUrl(url)}' agent-runtime-sidecar`;
  return `echo '${token}' | ${sidecar} login --url '${url}' --machine '${machine}' && ${sidecar} connect`;
}

/**
 * A scoped admin manages only what lies inside its scope (docs/architecture.md, "Trust"): the machines
 * it names (`reachMachine`), and the tokens whose whole scope it covers. No scope can be widened by the one it limits.
 */
function coveredBy(identity: Identity, token: Pick<TokenInfo, "machines">): boolean {
  return scopeCovers(identity.machines, token.machines);
}

export const trustRoutes = new OpenAPIHono<AppEnv>()
  .openapi(whoami, function whoAmI(c) {
    const { name, role, machines, tokenId, expiresAtMs } = c.get("identity");
    return c.json({ name, role, machines, tokenId, expiresAtMs }, 200);
  })
  .openapi(createTicket, async function issueTicket(c) {
    return c.json(await mintTicket(settings(c.env).tunnelSecret, c.get("identity")), 201);
  })
  .openapi(openSignin, async function openSignIn(c) {
    const identity = c.get("identity");
    const expiresAtMs = await signIn(c, identity, settings(c.env).apiTokens);
    return c.json({ name: identity.name, role: identity.role, expiresAtMs }, 201);
  })
  .openapi(closeSignin, async function closeSignIn(c) {
    await signOut(c);
    return c.body(null, 204);
  })
  .openapi(createToken, async function issueToken(c) {
    const request = c.req.valid("json");
    const issuer = c.get("identity");
    // Omitted, the new token reaches what its issuer reaches; asked for more, it is refused.
    const machines = request.machines ?? issuer.machines;
    if (!scopeCovers(issuer.machines, machines)) {
      const beyond = machines === "*" ? "every machine ('*')" : machines.filter((m) => !scopeAllows(issuer.machines, m)).join(", ");
      throw new ProblemError("permission_denied", `the token '${issuer.name}' may not grant ${beyond}: a token can reach only machines its issuer reaches`, {
        scope: issuer.machines,
      });
    }
    const now = Date.now();
    const { id, token } = newApiToken();
    const stored: StoredToken = {
      id,
      name: request.name,
      role: request.role,
      machines,
      createdAtMs: now,
      createdBy: issuer.name,
      expiresAtMs: request.expiresInSeconds ? now + request.expiresInSeconds * 1000 : null,
      revokedAtMs: null,
      lastUsedMs: null,
      hash: await sha256Hex(token),
    };
    const { hash: _hash, ...info } = stored;
    if (!(await teamStub(c.env).registerToken(info))) throw new ProblemError("conflict", "this team has as many live tokens as it may have; revoke some first");
    await tokenStub(c.env, id).create(stored);
    return c.json({ ...info, token }, 201);
  })
  .openapi(listTokens, async function listIssuedTokens(c) {
    const identity = c.get("identity");
    const index = (await teamStub(c.env).listTokens()).filter((t) => coveredBy(identity, t));
    // Each live token's own object knows when it was last used; revoked ones are final in the index.
    const tokens = await Promise.all(index.map(async (t) => (t.revokedAtMs === null ? ((await tokenStub(c.env, t.id).info()) ?? t) : t)));
    return c.json({ tokens }, 200);
  })
  .openapi(revokeToken, async function revokeIssuedToken(c) {
    const { id } = c.req.valid("param");
    const target = await tokenStub(c.env, id).info();
    // A token outside the caller's scope is as unknown to it as one that never was.
    if (!target || !coveredBy(c.get("identity"), target)) throw new ProblemError("not_found", `no token with id '${id}'`);
    const revoked = await tokenStub(c.env, id).revoke(Date.now());
    if (!revoked) throw new ProblemError("not_found", `no token with id '${id}'`);
    const team = teamStub(c.env);
    await team.updateToken(revoked);
    // Its notifications end with it, and so does every stream it holds: transcripts, ACP streams and
    // sockets, terminals, on the machines its own object says it opened them on (online or not).
    await team.deleteSubscriptionsOf(id);
    const machines = await tokenStub(c.env, id).streamsHeldOn();
    await bounded(machines, 16, (m) =>
      machineObject(c.env, m)
        .endStreamsOf(id, revoked.name)
        .catch((err: unknown) => console.error(`machine ${m}: could not end the streams of a revoked token:`, err)),
    );
    return c.json(revoked, 200);
  })
  // A scoped admin reads what happened on its machines, not the team's other entries.
  .openapi(audit, async function readAudit(c) {
    return c.json(await teamStub(c.env).readAudit(c.req.valid("query"), c.get("identity").machines), 200);
  })
  .openapi(mintMachine, async function issueMachineToken(c) {
    const { machine, expiresInSeconds } = c.req.valid("json");
    await reachMachine(c, machine);
    // A machine that never connected has no object yet, and minting its first token creates none.
    const generation = (await machineKnown(c.env, machine)) ? await machineObject(c.env, machine).tokenGeneration() : 1;
    const expiresAtMs = expiresInSeconds ? Math.ceil((Date.now() + expiresInSeconds * 1000) / 1000) * 1000 : null;
    const token = await mintMachineToken(settings(c.env).tunnelSecret, machine, { generation, expiresAtMs });
    return c.json({ machine, token, generation, expiresAtMs, connectCommand: connectCommand(new URL(c.req.url).origin, machine, token) }, 201);
  })
  .openapi(revokeMachine, async function revokeMachineTokens(c) {
    const { machine } = c.req.valid("param");
    await reachMachine(c, machine);
    if (!(await machineKnown(c.env, machine))) throw new ProblemError("not_found", `no machine '${machine}' has ever connected: it has no token to revoke`);
    const generation = await machineObject(c.env, machine).revokeTokens();
    return c.json({ machine, generation }, 200);
  });
