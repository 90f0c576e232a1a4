/** The bearer token of a request, or null when the header is missing or not `Bearer <token>` (RFC 6750). */
export function bearerToken(header: string | undefined | null): string | null {
  if (!header) return null;
  const match = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(header);
  return match?.[1] ?? null;
}
