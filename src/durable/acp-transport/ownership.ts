/**
 * Whose an ACP server is (docs/architecture.md, "ACP's remote transport"). A server opened through
 * `/v1/acp/{server_id}` is shared by the members of its machine, as sandbox-agent's are. A connection of
 * the remote transport (`acpc-…`, opened through `/acp`) is its opener's alone, whichever route names it:
 * another token may not post into it, read its stream or stop it through `/v1/acp/{server_id}` either, and
 * does not see it listed (an admin sees it, marked, and may stop it).
 */
import type { z } from "zod";
import type { AcpServer } from "@agent-runtime/protocol/acp";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import { Role } from "@agent-runtime/protocol/trust";
import { StreamHolder } from "../streams/stream-holders";
import { isJsonObject } from "@agent-runtime/protocol/json";

/** Who asks the machine's object for a server or a stream: the holder of what it opens, with its role. */
export const Caller = StreamHolder.extend({ role: Role });
export type Caller = z.infer<typeof Caller>;

/**
 * A caller as it crosses the object's RPC (http/machine.ts `callerOf`), checked by hand in its one shape
 * (every relayed message carries one, and zod has no JIT in workerd): exactly its four keys, a token id of
 * at most 64 characters or null, a name of at most 512, a role, a finite expiry or null. Anything else goes
 * through `Caller`, which names what is wrong; what this accepts the schema accepts, and it gives back the
 * same object, key for key in the schema's order (ownership.test.ts holds the two to the same answers).
 */
export function readCaller(value: unknown): Caller {
  if (isJsonObject(value) && Object.keys(value).length === 4) {
    const { tokenId, name, expiresAtMs } = value;
    const role = Role.options.find((known) => known === value.role);
    if (
      (tokenId === null || (typeof tokenId === "string" && tokenId.length <= 64)) &&
      typeof name === "string" &&
      name.length <= 512 &&
      role !== undefined &&
      (expiresAtMs === null || (typeof expiresAtMs === "number" && Number.isFinite(expiresAtMs)))
    )
      return { tokenId, name, expiresAtMs, role };
  }
  return Caller.parse(value);
}

/** The key a connection's opener is kept under: the issued token's id, else the name of a bootstrap or Access identity. */
export function ownerKey(holder: Pick<StreamHolder, "tokenId" | "name">): string {
  return holder.tokenId ?? `name:${holder.name}`;
}

/** What the object knows of its connections' openers. */
export interface ConnectionOwners {
  /** null: not a connection; "": a connection whose opener this object no longer knows (nobody's). */
  ownerOf(serverId: string): string | null;
  /** The name of the token that opened a connection, for an admin's list. */
  openerOf(serverId: string): string | null;
}

/** `GET /v1/acp` as `caller` sees it: another token's connections left out (an admin sees them), each connection marked. */
export function visibleServers(servers: AcpServer[], owners: ConnectionOwners, caller: Caller): AcpServer[] {
  return servers.flatMap((server) => {
    const owner = owners.ownerOf(server.serverId);
    if (owner === null) return [server];
    if (owner !== "" && owner === ownerKey(caller)) return [{ ...server, connection: { openedBy: caller.name } }];
    return caller.role === "admin" ? [{ ...server, connection: { openedBy: owners.openerOf(server.serverId) ?? "(unknown)" } }] : [];
  });
}

/** Why `caller` may not do `action` with server `serverId` (null: it may). */
export function refusedConnection(owners: ConnectionOwners, serverId: string, caller: Caller, action: "use" | "stop"): ProblemInit | null {
  const owner = owners.ownerOf(serverId);
  if (owner === null || (owner !== "" && owner === ownerKey(caller))) return null;
  if (action === "stop" && caller.role === "admin") return null;
  // Another token's connection is as unknown to this caller as one that never was.
  return { code: "not_found", detail: `no ACP server '${serverId}' of this token: a connection opened through /acp belongs to the token that opened it` };
}
