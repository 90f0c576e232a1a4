import { describe, expect, it } from "vitest";
import { mergeSse } from "./sse-merge";

const encoder = new TextEncoder();

/** A source the test writes to piece by piece, and whose cancellation it sees. */
function source() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const state = { cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    start: (c) => {
      controller = c;
    },
    cancel: () => {
      state.cancelled = true;
    },
  });
  return { stream, write: (text: string) => controller.enqueue(encoder.encode(text)), end: () => controller.close(), state };
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(stream).text();
}

describe("mergeSse", () => {
  it("passes whole events of each source, never a piece of one, and ends with the first source that ends", async () => {
    const a = source();
    const b = source();
    const merged = readAll(mergeSse([a.stream, b.stream], "retry: 5000\n\n"));
    a.write('event: session\ndata: {"id":');
    b.write("event: machine\ndata: {}\n\n");
    a.write('"s1"}\n\nevent: sess');
    await new Promise((resolve) => setTimeout(resolve, 0));
    a.write("ion\ndata: {}\n\n");
    await new Promise((resolve) => setTimeout(resolve, 0));
    b.end();
    const text = await merged;
    await expect.poll(() => a.state.cancelled).toBe(true);
    expect(text.startsWith("retry: 5000\n\n")).toBe(true);
    const events = text.split("\n\n").filter(Boolean);
    expect(events.sort()).toEqual(["event: machine\ndata: {}", 'event: session\ndata: {"id":"s1"}', "event: session\ndata: {}", "retry: 5000"].sort());
  });

  it("with no source, says its prelude and ends; a reader that leaves cancels every source", async () => {
    expect(await readAll(mergeSse([], "retry: 30000\n\n"))).toBe("retry: 30000\n\n");
    const a = source();
    const b = source();
    const reader = mergeSse([a.stream, b.stream], "").getReader();
    await reader.cancel();
    await expect.poll(() => [a.state.cancelled, b.state.cancelled]).toEqual([true, true]);
  });
});
