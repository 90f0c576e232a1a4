/** Bytes as base64 and back, with workerd's built-in TC39 methods of Uint8Array (TypeScript's lib does not declare them yet). */
declare global {
  interface Uint8ArrayConstructor {
    fromBase64(text: string): Uint8Array<ArrayBuffer>;
  }
  interface Uint8Array<TArrayBuffer extends ArrayBufferLike = ArrayBufferLike> {
    toBase64(): string;
  }
}

export function toBase64(bytes: Uint8Array): string {
  return bytes.toBase64();
}

export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.fromBase64(text);
}
