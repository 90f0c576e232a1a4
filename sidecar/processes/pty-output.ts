/**
 * A terminal's output, all of it. libuv (Node ≤ 24's) treats a short read followed by a hang-up
 * as the end of a stream, but a Linux PTY master can still hold the child's last bytes then:
 * a command that prints and exits at once loses its last line now and then (libuv issue 4992,
 * fixed upstream by one final read). Until every Node release our users run carries that fix, we do the same
 * final read: when the stream says it ended, the master's descriptor is still open, and reading it
 * until it reports the hang-up returns what libuv skipped.
 */
import { readSync } from "node:fs";
import { Socket } from "node:net";
import { StringDecoder } from "node:string_decoder";
import type { IPty } from "@lydell/node-pty";

const MAX_DRAIN_BYTES = 1024 * 1024;

/** Calls `onText` with everything the terminal prints, including what its end would have dropped. */
export function onPtyOutput(pty: IPty, onText: (text: string) => void): void {
  pty.onData(onText);
  // node-pty keeps its stream and descriptor private; a release that renames them only loses the
  // final read (the bug above), never output it already reads.
  const socket: unknown = Reflect.get(pty, "_socket");
  const fd: unknown = Reflect.get(pty, "_fd");
  if (!(socket instanceof Socket) || typeof fd !== "number") return;
  socket.prependOnceListener("end", () => {
    const text = drain(fd);
    if (text) onText(text);
  });
}

/** Reads a non-blocking descriptor until it is empty or hung up; never blocks. */
function drain(fd: number): string {
  const decoder = new StringDecoder("utf8");
  const chunk = Buffer.alloc(64 * 1024);
  let text = "";
  let total = 0;
  while (total < MAX_DRAIN_BYTES) {
    let n: number;
    try {
      n = readSync(fd, chunk, 0, chunk.length, null);
    } catch {
      break; // EIO: the other side hung up and nothing is left; EAGAIN: nothing is left
    }
    if (n <= 0) break;
    total += n;
    text += decoder.write(chunk.subarray(0, n));
  }
  return text + decoder.end();
}
