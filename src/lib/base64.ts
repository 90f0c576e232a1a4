/** Bytes as base64 and back, with workerd's built-in TC39 methods of Uint8Array (TypeScript's lib does not declare them yet). */
type WithBase64 = Uint8Array & { toBase64(): string };
const Base64Array = Uint8Array as unknown as { fromBase64(text: string): Uint8Array<ArrayBuffer> };

export function toBase64(bytes: Uint8Array): string {
  return (bytes as WithBase64).toBase64();
}

export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Base64Array.fromBase64(text);
}
