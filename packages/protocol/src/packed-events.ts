/**
 * A packed `ev` batch as the machine's object reads it (docs/architecture.md, "Frames"): a stream's every
 * update crosses here, so its control frame is checked field by field against exactly what its schema
 * (`PackedEventsFrame` in frames.ts) asks, and its events are cut out of the bytes with one decode when
 * they are all ASCII. A frame the light check does not accept goes through the schema, which decides and
 * names what is wrong; `packed-events.test.ts` holds the two to the same answers.
 */
import { Id } from "./ops/define";
import { isJsonObject } from "./json";

/** The bounds of a subscription's id, as its schema (`Id`) sets them. */
const ID_MIN = Id.minLength ?? 0;
const ID_MAX = Id.maxLength ?? Number.POSITIVE_INFINITY;
/** As `SharedWith` in frames.ts. */
const MAX_ALSO = 1000;

type Piece = [seq: number, byteLength: number];
type Gap = { from: number; to: number; tooLarge?: boolean };

/** A packed batch's control frame with its bytes, as the schema gives it back. */
export interface PackedBatch {
  t: "ev";
  sub: string;
  also?: string[];
  gap?: Gap;
  pieces: Piece[];
  bytes: Uint8Array;
}

const isId = (value: unknown): value is string => typeof value === "string" && value.length >= ID_MIN && value.length <= ID_MAX;
/** Stricter than zod's `int()` where they could differ (unsafe integers): those go to the schema. */
const isInt = (value: unknown): value is number => Number.isSafeInteger(value);

function gapOf(value: unknown): Gap | null {
  if (!isJsonObject(value)) return null;
  const { from, to, tooLarge }: { from?: unknown; to?: unknown; tooLarge?: unknown } = value;
  if (!isInt(from) || !isInt(to)) return null;
  if (tooLarge === undefined) return { from, to };
  return typeof tooLarge === "boolean" ? { from, to, tooLarge } : null;
}

/**
 * `value` (a decoded binary `ev` frame) as the schema would give it back, when it is one the schema
 * accepts and the check can tell; null otherwise (the schema then decides). Keys the schema does not
 * know are left out, as zod strips them.
 */
export function packedBatchOf(value: unknown): PackedBatch | null {
  if (!isJsonObject(value)) return null;
  const { t, sub, also, gap, pieces, bytes }: { t?: unknown; sub?: unknown; also?: unknown; gap?: unknown; pieces?: unknown; bytes?: unknown } = value;
  if (t !== "ev" || !isId(sub) || !(bytes instanceof Uint8Array) || !Array.isArray(pieces)) return null;
  if (also !== undefined && !(Array.isArray(also) && also.length <= MAX_ALSO && also.every(isId))) return null;
  const gapRead = gap === undefined ? undefined : gapOf(gap);
  if (gapRead === null) return null;
  let sum = 0;
  for (const piece of pieces) {
    if (!Array.isArray(piece) || piece.length !== 2) return null;
    const [seq, length] = piece as unknown[];
    if (!isInt(seq) || !isInt(length) || length < 0) return null;
    sum += length;
  }
  if (sum !== bytes.length) return null;
  return {
    t,
    sub,
    ...(also !== undefined ? { also: also as string[] } : {}),
    ...(gapRead ? { gap: gapRead } : {}),
    pieces: pieces as Piece[],
    bytes,
  };
}

const utf8Decoder = new TextDecoder();

/**
 * The events' texts cut out of `bytes` by the pieces' lengths (which add up to them: checked before).
 * One decode for the whole batch when every byte is ASCII (then a byte's offset is a character's); else
 * each piece decoded on its own, as it was written.
 */
export function cutEvents(pieces: readonly Piece[], bytes: Uint8Array): [number, string][] {
  const events: [number, string][] = new Array(pieces.length);
  const whole = utf8Decoder.decode(bytes);
  // Every byte became one character, none a replacement: all ASCII (a multi-byte character makes the text
  // shorter than its bytes, an invalid byte a U+FFFD; a leading BOM is dropped, which makes it shorter too).
  const ascii = whole.length === bytes.length && !whole.includes("\uFFFD");
  let at = 0;
  for (let i = 0; i < pieces.length; i++) {
    const [seq, length] = pieces[i]!;
    events[i] = [seq, ascii ? whole.slice(at, at + length) : utf8Decoder.decode(bytes.subarray(at, at + length))];
    at += length;
  }
  return events;
}
