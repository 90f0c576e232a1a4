import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { onLines } from "./agent-lines";

/** The lines `onLines` says for `bytes` written in the given chunks, once the stream ended. */
async function linesOf(chunks: Buffer[]): Promise<string[]> {
  const input = new PassThrough();
  const lines: string[] = [];
  onLines(input, (line) => lines.push(line));
  const ended = new Promise((resolve) => input.on("end", resolve));
  for (const chunk of chunks) input.write(chunk);
  input.end();
  await ended;
  return lines;
}

describe("an agent's lines", () => {
  const text = '{"a":"héllo 世界 🙂"}\n{"b":2}\r\n\n{"c":"x\\ny"}\n{"last":true}';
  const bytes = Buffer.from(text);
  const expected = ['{"a":"héllo 世界 🙂"}', '{"b":2}\r', "", '{"c":"x\\ny"}', '{"last":true}'];

  it("are the same wherever the chunks are cut (inside a line, inside a character, at a newline), the last one without its newline too", async () => {
    expect(await linesOf([bytes])).toEqual(expected);
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(await linesOf([bytes.subarray(0, cut), bytes.subarray(cut)]), `cut at ${cut}`).toEqual(expected);
    }
    expect(await linesOf([...bytes].map((b) => Buffer.from([b])))).toEqual(expected);
  });

  it("say nothing for an empty stream, and no empty last line after a final newline", async () => {
    expect(await linesOf([])).toEqual([]);
    expect(await linesOf([Buffer.from("{}\n")])).toEqual(["{}"]);
  });
});
