/**
 * The relay's path and query (`POST /v1/acp/{server_id}?agent=`), read by its handler (docs/architecture.md,
 * "The relay's route before the router"): every message carries them, and the validators a declared route
 * gets (zod, without its JIT in workerd, behind Hono's validator) cost more than the reading. The common
 * form is checked by hand, exactly as the schemas check it: a server id that `Identifier` accepts, and no
 * query or only `?agent=<an AgentId>`. Anything else goes through the same schemas, in the same order
 * (the query, then the path, as `@hono/zod-openapi` runs them), with the same 400 (`validationRefusal`).
 * relay-input.test.ts holds it to a declared route's answers on a table of paths and queries.
 */
import type { Context } from "hono";
import { z } from "zod";
import { AGENT_ID_PATTERN, AgentId, IDENTIFIER_PATTERN, Identifier } from "@agent-runtime/protocol/values";
import type { AppEnv } from "../env";
import { validationRefusal } from "./validation";

export const RelayParams = z.object({ server_id: Identifier });
export const RelayQuery = z.object({ agent: AgentId.optional().describe("agent to start; required on the first POST for a server id") });

export interface RelayInput {
  serverId: string;
  agent: AgentId | undefined;
}

/** The common form, read by hand with `Identifier`'s and `AgentId`'s own patterns; null when it is not (the schemas then decide). */
export function commonRelayInput(url: string, serverId: string | undefined): RelayInput | null {
  if (serverId === undefined || serverId.length > 128 || !IDENTIFIER_PATTERN.test(serverId) || serverId.includes("..")) return null;
  const at = url.indexOf("?");
  if (at === -1) return { serverId, agent: undefined };
  // A query of one `agent` alone, its value an `AgentId` (whose characters are never percent-encoded).
  const query = url.slice(at + 1);
  if (!query.startsWith("agent=")) return null;
  const agent = query.slice("agent=".length);
  return AGENT_ID_PATTERN.test(agent) ? { serverId, agent } : null;
}

/** The query as Hono's validator hands it to a schema: each name once, its values as one or a list. */
function queryOf(c: Context<AppEnv>): Record<string, string | string[]> {
  return Object.fromEntries(
    Object.entries(c.req.queries()).map(([name, values]) => [name, values.length === 1 && values[0] !== undefined ? values[0] : values]),
  );
}

/** The relay's server id and agent, or the 400 a declared route answers for them. */
export function relayInput(c: Context<AppEnv>): RelayInput | Response {
  const common = commonRelayInput(c.req.url, c.req.param("server_id"));
  if (common) return common;
  const query = RelayQuery.safeParse(queryOf(c));
  if (!query.success) return validationRefusal("query", query.error);
  const params = RelayParams.safeParse(c.req.param());
  if (!params.success) return validationRefusal("param", params.error);
  return { serverId: params.data.server_id, agent: query.data.agent };
}
