/** Who a request is, as authentication found it (http/auth.ts) and a token's object records it (durable/tokens/token.ts). */
import { MachineScope, Role } from "@agent-runtime/protocol/trust";
import { z } from "zod";

export const Identity = z.object({
  /** Shown in the audit log. */
  name: z.string(),
  role: Role,
  machines: MachineScope,
  /** The issued token's id; null for the bootstrap API_TOKEN and Cloudflare Access identities. */
  tokenId: z.string().nullable(),
  expiresAtMs: z.number().nullable(),
});
export type Identity = z.output<typeof Identity>;

/** The bootstrap admin's name: whoever presents one of the worker's API_TOKEN values. */
export const BOOTSTRAP_NAME = "API_TOKEN";

export function isBootstrap(identity: Identity): boolean {
  return identity.tokenId === null && identity.name === BOOTSTRAP_NAME;
}
