/**
 * A command that prints and exits at once on a terminal: every line reaches the log. Without the
 * final read in pty-output.ts, about one run in ten of this command loses its tail on Linux
 * (libuv's early end of stream), so sixty runs without a loss say the read is there.
 */
import { spawn } from "@lydell/node-pty";
import { expect, it } from "vitest";
import { onPtyOutput } from "./pty-output";

const LINES = 2000;

function runOnce(): Promise<string> {
  return new Promise((resolve) => {
    const pty = spawn("sh", ["-c", `i=0; while [ $i -lt ${LINES} ]; do echo line-$i; i=$((i+1)); done; echo END`], { cols: 80, rows: 24 });
    let out = "";
    onPtyOutput(pty, (text) => {
      out += text;
    });
    pty.onExit(() => resolve(out));
  });
}

it("loses no output of a command that exits as soon as it has printed", async () => {
  const short: number[] = [];
  for (let run = 0; run < 60; run++) {
    const out = await runOnce();
    const lines = out.split("\r\n").filter(Boolean);
    if (lines.length !== LINES + 1 || lines.at(-1) !== "END") short.push(run);
  }
  expect(short).toEqual([]);
}, 30_000);
