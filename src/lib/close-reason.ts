/**
 * A WebSocket close frame carries a reason of at most 123 bytes of UTF-8 (RFC 6455 §5.5: 125 with the
 * code); a longer one makes `close()` throw, and the socket would stay open. Cut by bytes, never inside
 * a character.
 */
const MAX_REASON_BYTES = 123;
const encoder = new TextEncoder();

export function closeReason(text: string): string {
  if (encoder.encode(text).length <= MAX_REASON_BYTES) return text;
  let cut = "";
  let bytes = 0;
  for (const ch of text) {
    const size = encoder.encode(ch).length;
    if (bytes + size > MAX_REASON_BYTES - 3) break;
    cut += ch;
    bytes += size;
  }
  return `${cut}...`;
}

/** Close a socket that may be closed already (then there is nothing to do). */
export function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, closeReason(reason));
  } catch {
    // already closed
  }
}
