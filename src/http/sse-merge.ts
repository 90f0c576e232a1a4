/**
 * Several `text/event-stream` bodies as one: each source's whole events (never a piece of one), interleaved
 * as they arrive. It ends when any source ends or fails, and its reader opens it again: a source ends when it
 * has been quiet for a while (its object may then sleep) or its machine's object went away, and a new request
 * picks up the machines as they are then.
 */
const encoder = new TextEncoder();

export function mergeSse(sources: ReadableStream<Uint8Array>[], prelude: string): ReadableStream<Uint8Array> {
  const readers = sources.map((source) => source.pipeThrough(new TextDecoderStream()).getReader());
  let ended = false;
  const stopAll = () => {
    ended = true;
    for (const reader of readers) reader.cancel().catch(() => undefined);
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(prelude));
      const finish = () => {
        if (ended) return;
        stopAll();
        controller.close();
      };
      if (readers.length === 0) return finish();
      for (const reader of readers) {
        void (async () => {
          let pending = "";
          try {
            for (;;) {
              const { value, done } = await reader.read();
              if (done || ended) return;
              pending += value;
              const cut = pending.lastIndexOf("\n\n");
              if (cut < 0) continue;
              controller.enqueue(encoder.encode(pending.slice(0, cut + 2)));
              pending = pending.slice(cut + 2);
            }
          } catch {
            // A source that failed ends the whole: the reader reconnects, as for one that ended.
          } finally {
            finish();
          }
        })();
      }
    },
    cancel: stopAll,
  });
}
