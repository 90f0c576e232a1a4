/** Who a request is, as authentication found it (http/auth.ts) and a token's object records it (durable/tokens/token.ts). */
import type { MachineScope, Role } from "@agent-runtime/protocol/trust";

export interface Identity {
  /** Shown in the audit log. */
  name: string;
  role: Role;
  machines: MachineScope;
  /** The issued token's id; null for the bootstrap API_TOKEN and Cloudflare Access identities. */
  tokenId: string | null;
  expiresAtMs: number | null;
}

/** The bootstrap admin's name: whoever presents one of the worker's API_TOKEN values. */
export const BOOTSTRAP_NAME = "API_TOKEN";

export function isBootstrap(identity: Identity): boolean {
  return identity.tokenId === null && identity.name === BOOTSTRAP_NAME;
}
