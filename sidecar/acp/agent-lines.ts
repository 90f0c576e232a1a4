/**
 * An agent's stdout as lines (ACP over stdio is newline-delimited JSON): each chunk is decoded once and cut
 * at its "\n"s, a line cut between chunks is joined, and a last line without its "\n" is said at the end.
 * Every line a streaming agent writes passes here: `readline` did the same with a regular expression and
 * an event per line; a "\r" before the "\n" stays on the line, which its reader trims. Unlike `readline`,
 * a lone "\r" does not end a line: ACP's messages are delimited by "\n" alone.
 */
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";

export function onLines(input: Readable, line: (text: string) => void): void {
  const decoder = new StringDecoder("utf8");
  let partial = "";
  input.on("data", (chunk: Buffer) => {
    const text = decoder.write(chunk);
    let at = text.indexOf("\n");
    if (at < 0) {
      partial += text;
      return;
    }
    line(partial + text.slice(0, at));
    let from = at + 1;
    for (at = text.indexOf("\n", from); at >= 0; at = text.indexOf("\n", from)) {
      line(text.slice(from, at));
      from = at + 1;
    }
    partial = text.slice(from);
  });
  input.on("end", () => {
    const rest = partial + decoder.end();
    partial = "";
    if (rest) line(rest);
  });
}
