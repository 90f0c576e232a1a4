/**
 * An attempt's check (docs/architecture.md, "Attempt groups"): the group's command, run with `sh -c` in
 * the attempt's worktree once its agent's turn ended, as the machine's user, leading its own process
 * group (written down so a sidecar killed outright has it reaped by the next), ended as a group past its
 * deadline or on a cancel. What is kept of its output is the last CHECK_TAIL_BYTES: where a test runner
 * says what failed.
 */
import { spawn } from "node:child_process";
import { CHECK_TAIL_BYTES, type CheckResult } from "@agent-runtime/protocol/attempts";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { ChildRegistry } from "../orphans";

/** After SIGTERM, this long before SIGKILL: a test runner gets to stop its own children. */
const KILL_GRACE_MS = 2_000;

export class Checks {
  private readonly running = new Map<string, (why: "timeout" | "stopped") => void>();

  constructor(private readonly children: ChildRegistry) {}

  run(request: { cwd: string; command: string; timeoutMs: number; key: string }): Promise<CheckResult> {
    if (this.running.has(request.key)) throw new ProblemError("conflict", `the check '${request.key}' is running already`);
    const started = Date.now();
    return new Promise((resolve, reject) => {
      const child = spawn("sh", ["-c", request.command], { cwd: request.cwd, detached: true, stdio: ["ignore", "pipe", "pipe"], env: process.env });
      if (child.pid !== undefined) this.children.add(child.pid);
      let tail = Buffer.alloc(0);
      const keep = (chunk: Buffer) => {
        tail = Buffer.concat([tail, chunk]);
        if (tail.length > CHECK_TAIL_BYTES) tail = tail.subarray(tail.length - CHECK_TAIL_BYTES);
      };
      child.stdout.on("data", keep);
      child.stderr.on("data", keep);
      let ended: "timeout" | "stopped" | null = null;
      const signal = (sig: NodeJS.Signals) => {
        try {
          process.kill(-child.pid!, sig);
        } catch {
          // The group is gone already.
        }
      };
      const end = (why: "timeout" | "stopped") => {
        if (ended) return;
        ended = why;
        signal("SIGTERM");
        setTimeout(() => signal("SIGKILL"), KILL_GRACE_MS).unref();
      };
      const timer = setTimeout(() => end("timeout"), request.timeoutMs);
      this.running.set(request.key, end);
      child.on("error", (err) => {
        clearTimeout(timer);
        this.running.delete(request.key);
        reject(new ProblemError("internal", `could not run the check: ${err.message}`));
      });
      child.on("close", (code) => {
        clearTimeout(timer);
        this.running.delete(request.key);
        if (child.pid !== undefined) this.children.remove(child.pid);
        // Bytes cut mid-character at the front read as one replacement character, not an error.
        resolve({ exitCode: ended ? null : code, durationMs: Date.now() - started, tail: tail.toString("utf8"), timedOut: ended === "timeout" });
      });
    });
  }

  /** Stop a running check (its attempt was cancelled); false when none runs under that key. */
  stop(key: string): boolean {
    const end = this.running.get(key);
    end?.("stopped");
    return end !== undefined;
  }

  stopAll(): void {
    for (const end of this.running.values()) end("stopped");
  }
}
