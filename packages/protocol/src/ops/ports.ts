/** The tunnel's preview operation: what listens on the machine (the proxied streams themselves are frames: preview.ts). */
import { PortList } from "../preview";
import { HALF_MINUTE, Nothing, type OpDefinition } from "./define";

export const PORT_OPS = {
  "ports.list": { deadlineMs: HALF_MINUTE, readOnly: true, args: Nothing, result: PortList },
} as const satisfies Record<string, OpDefinition>;
