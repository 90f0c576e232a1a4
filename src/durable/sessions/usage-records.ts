/**
 * What a session's turns used (docs/architecture.md, "Usage"): the agent's `usage_update`s (its context and
 * the session's cumulative cost) and a turn's `usage` (its tokens) become the turn's share, kept in its
 * `stop` entry, and the session's totals by day, kept on its record. Nothing else counts per message.
 */
import { type Cost, costGrowth, emptyUsage, promptUsageOf, SessionUsage, type TurnUsage, usageUpdateOf, withTurn } from "@agent-runtime/protocol/usage";
import { parsedOr } from "../storage/stored";
import type { LiveSession } from "./live-sessions";

/** The cost the agent last reported for each session (its running total), until the turn's end takes its share. */
const reported = new WeakMap<LiveSession, Cost>();

/** A `session/update` that was a usage_update: its context is on the record now, its cost (the session's so far) waits for the turn's end. */
export function usageUpdated(session: LiveSession, update: unknown): { cost: Cost | null } | null {
  // Every update of a stream asks: the kind is read first, so that a text chunk is not put through the
  // schema only to be refused (a refusal builds its issues: 12% of the object's time in a stream's profile).
  if (typeof update !== "object" || update === null || !("sessionUpdate" in update) || update.sessionUpdate !== "usage_update") return null;
  const said = usageUpdateOf(update);
  if (!said) return null;
  const usage = parsedOr(SessionUsage, session.row.usage) ?? emptyUsage();
  session.row.usage = JSON.stringify({ ...usage, contextUsed: said.used, contextSize: said.size });
  if (said.cost) reported.set(session, said.cost);
  session.dirty = true;
  return { cost: said.cost };
}

/** A turn ended: its share (tokens from the answer, the cost the session grew by), added to the record; null when the agent said nothing. */
export function turnUsage(session: LiveSession, result: unknown, now: number): TurnUsage | null {
  const tokens = promptUsageOf(result);
  const cost = reported.get(session) ?? null;
  reported.delete(session);
  if (!tokens && !cost) return null;
  const usage = parsedOr(SessionUsage, session.row.usage) ?? emptyUsage();
  const turn: TurnUsage = { inputTokens: 0, outputTokens: 0, cachedTokens: 0, ...tokens, cost: costGrowth(usage.cost, cost) };
  session.row.usage = JSON.stringify(withTurn(usage, turn, now));
  session.dirty = true;
  return turn;
}
