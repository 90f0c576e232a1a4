import { describe, expect, it } from "vitest";
import { encodeFrame, packEvents, parseSidecarFrame, type StreamEvent } from "@agent-runtime/protocol/frames";
import { encodePackedEvents } from "./packed-frame";

const update = JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk" } } });
const batches: [string, StreamEvent[], { from: number; to: number; tooLarge?: boolean } | undefined, string[] | undefined][] = [
  ["one update", [[1, update]], undefined, undefined],
  [
    "text beyond ASCII, quotes, a lone surrogate, an empty text",
    [
      [3, '{"text":"ünïcode \\"quoted\\" 🚀"}'],
      [4, "\ud800"],
      [5, ""],
    ],
    undefined,
    undefined,
  ],
  ["a gap and other subscriptions", [[9, update]], { from: 6, to: 8 }, ["reader", "rec:a"]],
  ["an empty list of others", [[9, update]], { from: 2, to: 8, tooLarge: true }, []],
  ["a large batch", Array.from({ length: 256 }, (_, i): StreamEvent => [i + 1, `${update}${"x".repeat(i * 40)}`]), undefined, undefined],
];

describe("encodePackedEvents: a packed batch built in one buffer", () => {
  it.each(batches)("%s: the bytes of encodeFrame(packEvents(...)), which the worker reads back as the events", (_, events, gap, also) => {
    const bytes = encodePackedEvents("sub-1", events, gap, also);
    const reference = encodeFrame(packEvents("sub-1", events, gap, also));
    expect(Buffer.from(bytes).equals(Buffer.from(reference))).toBe(true);
    const read = parseSidecarFrame(bytes);
    expect(read.ok && read.frame.t === "ev" ? read.frame.events : read).toEqual(events.map(([seq, json]) => [seq, Buffer.from(json).toString()]));
  });
});
