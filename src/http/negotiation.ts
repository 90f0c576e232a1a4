/**
 * Does an Accept header allow this media type? A missing header allows anything
 * (as HTTP says); `*\/*` and `type/*` match; `q=0` refuses.
 */
export function accepts(accept: string | undefined, mediaType: string): boolean {
  if (!accept?.trim()) return true;
  const [type] = mediaType.split("/");
  return accept.split(",").some((part) => {
    const [range = "", ...params] = part.trim().toLowerCase().split(";");
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    if (q && Number(q.slice(2)) === 0) return false;
    return range === "*/*" || range === mediaType || range === `${type}/*`;
  });
}
