/**
 * What turns cost (docs/architecture.md, "Usage"): what agents report (ACP's `usage_update`: the context
 * window and the session's cumulative cost; a turn's `usage` in `session/prompt`'s answer: its tokens),
 * kept per turn in the turn's `stop` entry and summed on the session's record, by day, so that team totals
 * are read from the records (GET /v1/usage) and nothing counts per message anywhere else.
 */
import { z } from "zod";
import { resource } from "./resource";

export const Cost = resource("Cost", { amount: z.number(), currency: z.string() });
export type Cost = z.infer<typeof Cost>;

const Tokens = {
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cachedTokens: z.number().int().nonnegative().describe("read from or written to the model's cache"),
};

/** One turn's share, in its `stop` entry's `data.usage`. */
export const TurnUsage = resource("TurnUsage", { ...Tokens, cost: Cost.nullable().describe("what the session's cost grew by during the turn") });
export type TurnUsage = z.infer<typeof TurnUsage>;

export const UsageTotals = z.object({ ...Tokens, cost: Cost.nullable(), turns: z.number().int().nonnegative() });
export type UsageTotals = z.infer<typeof UsageTotals>;

export const SessionUsage = UsageTotals.extend({
  contextUsed: z.number().int().nullable().describe("tokens in the agent's context now"),
  contextSize: z.number().int().nullable().describe("the context window's size"),
  days: z.record(z.string(), UsageTotals).describe("the same totals by UTC day (YYYY-MM-DD) of each turn's end"),
}).meta({ id: "SessionUsage" });
export type SessionUsage = z.infer<typeof SessionUsage>;

export function emptyUsage(): SessionUsage {
  return { inputTokens: 0, outputTokens: 0, cachedTokens: 0, cost: null, turns: 0, contextUsed: null, contextSize: null, days: {} };
}

// ---------------- what agents say ----------------

const UsageUpdate = z
  .object({ sessionUpdate: z.literal("usage_update"), used: z.number(), size: z.number(), cost: Cost.passthrough().nullish() })
  .passthrough();

/** An ACP `usage_update` (context and the session's cumulative cost), or null for anything else. */
export function usageUpdateOf(update: unknown): { used: number; size: number; cost: Cost | null } | null {
  const parsed = UsageUpdate.safeParse(update);
  if (!parsed.success) return null;
  const { used, size, cost } = parsed.data;
  return { used: Math.round(used), size: Math.round(size), cost: cost ? { amount: cost.amount, currency: cost.currency } : null };
}

const Count = z.number().int().nonnegative().nullish();
const PromptUsage = z
  .object({
    usage: z.object({ inputTokens: Count, outputTokens: Count, cachedReadTokens: Count, cachedWriteTokens: Count }).passthrough().nullish(),
  })
  .passthrough();

/** A turn's tokens from `session/prompt`'s answer (ACP's `usage`), or null when the agent says none. */
export function promptUsageOf(result: unknown): Omit<TurnUsage, "cost"> | null {
  const parsed = PromptUsage.safeParse(result);
  const usage = parsed.success ? parsed.data.usage : null;
  if (!usage) return null;
  return {
    inputTokens: usage.inputTokens ?? 0,
    outputTokens: usage.outputTokens ?? 0,
    cachedTokens: (usage.cachedReadTokens ?? 0) + (usage.cachedWriteTokens ?? 0),
  };
}

/** `after` less `before`, in `after`'s currency (a currency that changed counts all of `after`). */
export function costGrowth(before: Cost | null, after: Cost | null): Cost | null {
  if (!after) return null;
  const base = before && before.currency === after.currency ? before.amount : 0;
  // A total below what was counted: the agent counts afresh (a new process that kept no total): all of it is new.
  return { amount: round(after.amount >= base ? after.amount - base : after.amount), currency: after.currency };
}

function addCost(a: Cost | null, b: Cost | null): Cost | null {
  if (!a) return b;
  if (!b || b.currency !== a.currency) return a;
  return { amount: round(a.amount + b.amount), currency: a.currency };
}

/** Money in floating point: kept to a millionth of the unit, as agents report it. */
function round(amount: number): number {
  return Math.round(amount * 1e9) / 1e9;
}

export function addTotals<T extends UsageTotals>(into: T, turn: TurnUsage, turns = 1): T {
  return {
    ...into,
    inputTokens: into.inputTokens + turn.inputTokens,
    outputTokens: into.outputTokens + turn.outputTokens,
    cachedTokens: into.cachedTokens + turn.cachedTokens,
    cost: addCost(into.cost, turn.cost),
    turns: into.turns + turns,
  };
}

/** A turn's usage added to a session's: its totals, and its day's. */
export function withTurn(usage: SessionUsage, turn: TurnUsage, atMs: number): SessionUsage {
  const day = new Date(atMs).toISOString().slice(0, 10);
  const dayTotals = usage.days[day] ?? { inputTokens: 0, outputTokens: 0, cachedTokens: 0, cost: null, turns: 0 };
  return { ...addTotals(usage, turn), days: { ...usage.days, [day]: addTotals(dayTotals, turn) } };
}

// ---------------- GET /v1/usage ----------------

export const UsageGroupBy = z.enum(["agent", "machine", "token", "day"]);
export type UsageGroupBy = z.infer<typeof UsageGroupBy>;

/** One session's share of a period, as a machine's object answers it. */
export const UsageRow = z.object({ session: z.string(), machine: z.string(), agent: z.string(), token: z.string(), day: z.string(), totals: UsageTotals });
export type UsageRow = z.infer<typeof UsageRow>;

export const UsageGroup = UsageTotals.omit({ cost: true })
  .extend({
    key: z.string().describe("the agent, machine, token name or day"),
    costs: z.array(Cost).describe("cost per currency (agents may report different ones)"),
    sessions: z.number().int(),
  })
  .meta({ id: "UsageGroup" });
export type UsageGroup = z.infer<typeof UsageGroup>;

export const UsageReport = resource("UsageReport", {
  from: z.string(),
  to: z.string(),
  groupBy: UsageGroupBy,
  groups: z.array(UsageGroup),
  total: UsageGroup.omit({ key: true }),
});
export type UsageReport = z.infer<typeof UsageReport>;

/** Rows summed into groups (by agent, machine, token or day), each with its cost per currency, and the total. */
export function sumUsage(rows: UsageRow[], groupBy: UsageGroupBy): Pick<UsageReport, "groups" | "total"> {
  type Sum = { totals: UsageTotals; costs: Map<string, number>; sessions: Set<string> };
  const zero = (): Sum => ({ totals: { inputTokens: 0, outputTokens: 0, cachedTokens: 0, cost: null, turns: 0 }, costs: new Map(), sessions: new Set() });
  const groups = new Map<string, Sum>();
  const total = zero();
  for (const row of rows) {
    const key = row[groupBy];
    const group = groups.get(key) ?? zero();
    groups.set(key, group);
    for (const into of [group, total]) {
      into.totals = addTotals(into.totals, { ...row.totals, cost: null }, row.totals.turns);
      if (row.totals.cost) into.costs.set(row.totals.cost.currency, round((into.costs.get(row.totals.cost.currency) ?? 0) + row.totals.cost.amount));
      into.sessions.add(row.session);
    }
  }
  const shaped = (g: Sum) => {
    const { cost: _cost, ...tokens } = g.totals;
    return { ...tokens, costs: [...g.costs].map(([currency, amount]) => ({ amount, currency })), sessions: g.sessions.size };
  };
  return {
    groups: [...groups].sort(([a], [b]) => a.localeCompare(b)).map(([key, g]) => ({ key, ...shaped(g) })),
    total: shaped(total),
  };
}
