/**
 * Where review meets the relay (docs/architecture.md, "Review and ship"): the ACP bridge hands each
 * client message for a session to these hooks on its way to the agent and its answer on the way back.
 * A `session/new` that asks for a worktree runs in one; every session start records its folder; every
 * turn is bracketed by checkpoints, and its answer carries the turn's summary in `_meta`.
 */
import { z } from "zod";
import type { AcpPostResult } from "@agent-runtime/protocol/ops/acp";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { CHANGES_META, WORKTREE_META, WorktreeRequest } from "@agent-runtime/protocol/review";
import { logger } from "../log";
import type { Checkpoints } from "./checkpoints";
import type { Worktrees } from "./worktrees";

const log = logger("review");

/** The parts of a client's message the hooks read; the rest is kept as it is. */
const Message = z
  .object({
    method: z.string().optional(),
    params: z
      .object({ sessionId: z.string().optional(), cwd: z.string().optional(), _meta: z.record(z.string(), z.unknown()).nullish() })
      .passthrough()
      .optional(),
  })
  .passthrough();
const Answer = z.object({ result: z.record(z.string(), z.unknown()).optional(), error: z.unknown().optional() }).passthrough();

/** What to send the agent, and what to do with its answer (or with the call's failure). */
export interface Hooked {
  message: string;
  /** The folder the session runs in, if the hooks moved it (a worktree). */
  cwd?: string;
  answered(answer: AcpPostResult): Promise<AcpPostResult>;
  failed(): Promise<void>;
}

const PASS: Omit<Hooked, "message"> = { answered: async (a) => a, failed: async () => {} };

/** A successful answer, parsed once: the whole message and its result (null for an error or a non-JSON body). */
function parsedAnswer(answer: AcpPostResult): { message: z.infer<typeof Answer>; result: Record<string, unknown> } | null {
  if (answer.status !== 200) return null;
  try {
    const parsed = Answer.safeParse(JSON.parse(answer.body));
    return parsed.success && parsed.data.error === undefined && parsed.data.result ? { message: parsed.data, result: parsed.data.result } : null;
  } catch {
    return null;
  }
}

function resultOf(answer: AcpPostResult): Record<string, unknown> | null {
  return parsedAnswer(answer)?.result ?? null;
}

function withMeta(answer: AcpPostResult, key: string, value: unknown): AcpPostResult {
  const parsed = parsedAnswer(answer);
  if (answer.status !== 200 || !parsed) return answer;
  const { message, result } = parsed;
  const meta = z.record(z.string(), z.unknown()).safeParse(result._meta).data ?? {};
  return { ...answer, body: JSON.stringify({ ...message, result: { ...result, _meta: { ...meta, [key]: value } } }) };
}

export class SessionHooks {
  constructor(
    private readonly checkpoints: Checkpoints,
    private readonly worktrees: Worktrees,
  ) {}

  /** A session opened in `cwd`: recorded, and its folder's first snapshot started in the background. */
  private async opened(key: { agent: string; sessionId: string }, cwd: string): Promise<void> {
    await this.checkpoints.sessionOpened(key, cwd);
    void this.checkpoints.prime(key).catch((err: unknown) => log.warn(`${key.sessionId}: no first snapshot: ${String(err)}`));
  }

  /** A session was reattached by the runtime in `cwd` (a restart): its checkpoints go on there. */
  async reattached(agent: string, sessionId: string, cwd: string): Promise<void> {
    await this.checkpoints.sessionOpened({ agent, sessionId }, cwd).catch((err: unknown) => log.warn(`${sessionId}: ${String(err)}`));
  }

  async hook(agent: string, method: string | null, raw: string): Promise<Hooked> {
    if (method !== "session/new" && method !== "session/load" && method !== "session/resume" && method !== "session/prompt") return { message: raw, ...PASS };
    let parsed: z.infer<typeof Message>;
    try {
      const value = Message.safeParse(JSON.parse(raw));
      if (!value.success) return { message: raw, ...PASS };
      parsed = value.data;
    } catch {
      return { message: raw, ...PASS };
    }
    const params = parsed.params ?? {};
    if (method === "session/prompt") return this.turn(agent, params.sessionId, raw);
    if (!params.cwd) return { message: raw, ...PASS };
    const asked = method === "session/new" ? params._meta?.[WORKTREE_META] : undefined;
    if (asked === undefined || asked === null) return this.opening(agent, method, params.sessionId, params.cwd, raw);
    const request = WorktreeRequest.safeParse(asked === true ? {} : asked);
    if (!request.success)
      throw new ProblemError("invalid_request", `_meta["${WORKTREE_META}"]: ${request.error.issues[0]?.message ?? "not a worktree request"}`);
    const made = await this.worktrees.create(params.cwd, request.data);
    const message = JSON.stringify({ ...parsed, params: { ...params, cwd: made.cwd } });
    return {
      message,
      cwd: made.cwd,
      answered: async (answer) => {
        const result = resultOf(answer);
        if (!result || typeof result.sessionId !== "string") {
          await this.worktrees.remove(made.worktree.path, true).catch(() => undefined);
          return answer;
        }
        await this.worktrees.usedBy(made.worktree.path, result.sessionId);
        await this.opened({ agent, sessionId: result.sessionId }, made.cwd);
        return withMeta(answer, WORKTREE_META, { ...made.worktree, cwd: made.cwd });
      },
      failed: async () => {
        await this.worktrees.remove(made.worktree.path, true).catch(() => undefined);
      },
    };
  }

  private opening(agent: string, method: string, sessionId: string | undefined, cwd: string, raw: string): Hooked {
    return {
      message: raw,
      ...PASS,
      answered: async (answer) => {
        const result = resultOf(answer);
        const id = method === "session/new" ? result?.sessionId : result ? sessionId : undefined;
        if (typeof id === "string") await this.opened({ agent, sessionId: id }, cwd);
        return answer;
      },
    };
  }

  /** A turn: a checkpoint before it reaches the agent, another when it ends, its summary in the answer. */
  private async turn(agent: string, sessionId: string | undefined, raw: string): Promise<Hooked> {
    if (!sessionId) return { message: raw, ...PASS };
    const key = { agent, sessionId };
    // A checkpoint that cannot be taken (the folder is gone, git is missing) never stops the turn.
    const started = await this.checkpoints.turnStarting(key).catch((err: unknown) => {
      log.warn(`${sessionId}: no checkpoint before the turn: ${err instanceof Error ? err.message : String(err)}`);
      return null;
    });
    if (started === null) return { message: raw, ...PASS };
    const end = () =>
      this.checkpoints.turnEnded(key).catch((err: unknown) => {
        log.warn(`${sessionId}: no checkpoint after turn ${started}: ${err instanceof Error ? err.message : String(err)}`);
        return null;
      });
    return {
      message: raw,
      answered: async (answer) => {
        const summary = await end();
        return summary ? withMeta(answer, CHANGES_META, summary) : answer;
      },
      failed: async () => {
        await end();
      },
    };
  }
}
