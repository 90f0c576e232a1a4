/**
 * A body as a byte stream's reader (BYOB), so that a read fills a buffer of the reader's choosing from as
 * many of the body's few-KiB chunks as have come (`read`) or as it asks for (`readAtLeast`, workerd's). A
 * stream that is not a byte stream is piped through one that is.
 */
export function byteReader(body: ReadableStream<Uint8Array>): ReadableStreamBYOBReader {
  try {
    return body.getReader({ mode: "byob" });
  } catch {
    return body.pipeThrough(new IdentityTransformStream()).getReader({ mode: "byob" });
  }
}
