/**
 * Content negotiation by the `Accept` header (RFC 9110 §12.5.1): each media range with its q-value, the
 * most specific range that matches a type deciding that type's quality.
 */

interface Range {
  type: string;
  subtype: string;
  q: number;
}

function ranges(accept: string): Range[] {
  return accept.split(",").flatMap((part) => {
    const [range = "", ...params] = part.trim().toLowerCase().split(";");
    const [type, subtype] = range.trim().split("/");
    if (!type || !subtype) return [];
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    return [{ type, subtype, q: Number.isFinite(q) ? Math.min(Math.max(q, 0), 1) : 0 }];
  });
}

/** How much `accept` wants `mediaType` (0 to 1) and how specifically it said so (0: `*\/*`, 1: `type/*`, 2: exact). */
function quality(accept: string, mediaType: string): { q: number; specificity: number } {
  const [type, subtype] = mediaType.toLowerCase().split("/");
  let best = { q: 0, specificity: -1 };
  for (const r of ranges(accept)) {
    const specificity = r.type === type && r.subtype === subtype ? 2 : r.type === type && r.subtype === "*" ? 1 : r.type === "*" && r.subtype === "*" ? 0 : -1;
    if (specificity > best.specificity) best = { q: r.q, specificity };
  }
  return best;
}

/**
 * Does an Accept header allow this media type? A missing header allows anything (as HTTP says);
 * `*\/*` and `type/*` match; the most specific range decides, so `text/*;q=0, text/plain` allows text/plain.
 */
export function accepts(accept: string | undefined, mediaType: string): boolean {
  // What nearly every client sends on the relay's path: the type itself, nothing to weigh.
  if (accept === mediaType) return true;
  if (!accept?.trim()) return true;
  return quality(accept, mediaType).q > 0;
}

/**
 * Does `accept` ask for `wanted` rather than `other`? Yes when it wants it more, or as much but named it
 * more specifically (`text/event-stream, *\/*` asks for the stream; `*\/*` alone does not).
 */
export function prefers(accept: string | undefined, wanted: string, other: string): boolean {
  if (!accept?.trim()) return false;
  const a = quality(accept, wanted);
  const b = quality(accept, other);
  return a.q > 0 && (a.q > b.q || (a.q === b.q && a.specificity > b.specificity));
}

/** Does an Accept-Encoding take gzip (not refused with q=0)? */
export function acceptsGzip(header: string | undefined): boolean {
  return (header ?? "").split(",").some((part) => {
    const [coding = "", ...params] = part.trim().split(";");
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    return (coding.trim() === "gzip" || coding.trim() === "*") && (q === undefined || Number(q.slice(2)) > 0);
  });
}
