/**
 * The worker's frames as the sidecar reads them: a call (`req`), the frame of every relayed message, is
 * checked field by field against exactly what its schema asks (`WorkerFrame`'s `req`: an id of 1–256
 * characters, a known operation, arguments of any value, which `parseOpArgs` then checks against the operation's
 * own schema); every other frame, and a call that fails the check, goes through the schema itself, which
 * names what is wrong. The message's JSON is parsed once on the call's path, and the union of every
 * frame is not walked for it.
 */
import { type FrameMessage, type Parsed, parseWorkerFrame, type WorkerFrame } from "@agent-runtime/protocol/frames";
import { OpNameSchema, type OpName } from "@agent-runtime/protocol/ops";
import { Id } from "@agent-runtime/protocol/ops/define";
import { isJsonObject } from "@agent-runtime/protocol/json";

const OP_NAMES: ReadonlySet<string> = new Set(OpNameSchema.options);
/** The bounds of a call's id, as its schema (`Id`) sets them. */
const ID_MIN = Id.minLength ?? 0;
const ID_MAX = Id.maxLength ?? Number.POSITIVE_INFINITY;

function isOpName(op: unknown): op is OpName {
  return typeof op === "string" && OP_NAMES.has(op);
}

/** A frame from the worker, parsed; what does not parse is named, for the log and the answer (as `parseWorkerFrame`). */
export function readWorkerFrame(message: FrameMessage): Parsed<WorkerFrame> {
  if (typeof message === "string") {
    let value: unknown;
    try {
      value = JSON.parse(message);
    } catch {
      return parseWorkerFrame(message); // it says how the text is not JSON
    }
    const call = callOf(value);
    if (call) return { ok: true, frame: call };
  }
  return parseWorkerFrame(message);
}

/** `value` as a call, when it is one that `WorkerFrame` accepts; null otherwise (the schema then decides). */
function callOf(value: unknown): Extract<WorkerFrame, { t: "req" }> | null {
  if (!isJsonObject(value)) return null;
  const { t, id, op, args }: { t?: unknown; id?: unknown; op?: unknown; args?: unknown } = value;
  if (t !== "req" || typeof id !== "string" || id.length < ID_MIN || id.length > ID_MAX || !isOpName(op)) return null;
  if (args === undefined) return null; // the schema asks for the key, whatever its value
  return { t, id, op, args };
}
