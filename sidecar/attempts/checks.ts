/**
 * An attempt's check (docs/architecture.md, "Attempt groups"): the group's command, run with `sh -c` in
 * the attempt's worktree once its agent's turn ended, as the machine's user, enclosed as the attempt's
 * agent was (the sandbox the team asked for it, never below the owner's floor: under `workspace` it writes
 * its worktree only, and reaches only the hosts its agent may), leading its own process group (written down so a sidecar killed outright has it reaped by the next), ended as a group past its
 * deadline or on a cancel. What is kept of its output is the last CHECK_TAIL_BYTES: where a test runner
 * says what failed.
 */
import { spawn } from "node:child_process";
import { CHECK_TAIL_BYTES, type CheckResult } from "@agent-runtime/protocol/attempts";
import { ProblemError } from "@agent-runtime/protocol/problems";
import type { SandboxSpec } from "@agent-runtime/protocol/sandbox";
import type { ChildRegistry } from "../orphans";
import type { Sandboxes } from "../sandbox/sandboxes";

/** After SIGTERM, this long before SIGKILL: a test runner gets to stop its own children. */
const KILL_GRACE_MS = 2_000;

/** The name a check's enclosure gives for its "agent": none of an agent's own state is opened to it. */
const CHECK_AGENT = "check";

interface Running {
  end(why: "timeout" | "stopped"): void;
  closed: Promise<unknown>;
}

export class Checks {
  private readonly running = new Map<string, Running>();

  constructor(
    private readonly children: ChildRegistry,
    private readonly sandboxes: Sandboxes,
  ) {}

  /**
   * Run a check. One of the same key still running is ended first: its machine's object asks again when the
   * answer to the first was lost (the object restarted), and only the last one's answer is awaited.
   */
  async run(request: { cwd: string; command: string; timeoutMs: number; key: string; sandbox?: SandboxSpec | undefined }): Promise<CheckResult> {
    const previous = this.running.get(request.key);
    if (previous) {
      previous.end("stopped");
      await previous.closed;
    }
    // Refused (in words saying what to install) when this machine cannot enforce the sandbox: never run bare.
    const enclosure = await this.sandboxes.enclosure(`check:${request.key}`, request.sandbox);
    enclosure.addFolder(request.cwd);
    const launch = await enclosure
      .wrap(CHECK_AGENT, { command: "sh", args: ["-c", request.command], cwd: request.cwd, env: {} })
      .catch(async (err: unknown) => {
        await enclosure.dispose();
        throw err;
      });
    const started = Date.now();
    let end: Running["end"] = () => {};
    const result = new Promise<CheckResult>((resolve, reject) => {
      const child = spawn(launch.command, launch.args, {
        cwd: launch.cwd,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, ...launch.env },
      });
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
      end = (why) => {
        if (ended) return;
        ended = why;
        signal("SIGTERM");
        setTimeout(() => signal("SIGKILL"), KILL_GRACE_MS).unref();
      };
      const timer = setTimeout(() => end("timeout"), request.timeoutMs);
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
    }).finally(() => enclosure.dispose());
    this.running.set(request.key, { end: (why) => end(why), closed: result.catch(() => undefined) });
    return result;
  }

  /** Stop a running check (its attempt was cancelled); false when none runs under that key. */
  stop(key: string): boolean {
    const running = this.running.get(key);
    running?.end("stopped");
    return running !== undefined;
  }

  stopAll(): void {
    for (const running of this.running.values()) running.end("stopped");
  }
}
