import { describe, expect, it } from "vitest";
import { costGrowth, emptyUsage, promptUsageOf, sumUsage, usageUpdateOf, withTurn } from "./usage";

describe("what agents report", () => {
  it("reads a usage_update's context and cost, and a turn's tokens from session/prompt's answer", () => {
    expect(usageUpdateOf({ sessionUpdate: "usage_update", used: 42, size: 1000, cost: { amount: 0.5, currency: "USD" } })).toEqual({
      used: 42,
      size: 1000,
      cost: { amount: 0.5, currency: "USD" },
    });
    expect(usageUpdateOf({ sessionUpdate: "usage_update", used: 1, size: 2 })?.cost).toBeNull();
    expect(usageUpdateOf({ sessionUpdate: "plan", entries: [] })).toBeNull();
    expect(
      promptUsageOf({ stopReason: "end_turn", usage: { inputTokens: 3, outputTokens: 4, totalTokens: 7, cachedReadTokens: 2, cachedWriteTokens: 1 } }),
    ).toEqual({
      inputTokens: 3,
      outputTokens: 4,
      cachedTokens: 3,
    });
    expect(promptUsageOf({ stopReason: "end_turn" })).toBeNull();
  });

  it("counts a turn's cost as what the session's total grew by (all of it when the agent counts afresh)", () => {
    expect(costGrowth({ amount: 1, currency: "USD" }, { amount: 1.25, currency: "USD" })).toEqual({ amount: 0.25, currency: "USD" });
    expect(costGrowth({ amount: 1, currency: "USD" }, { amount: 0.2, currency: "USD" })).toEqual({ amount: 0.2, currency: "USD" });
    expect(costGrowth(null, null)).toBeNull();
  });
});

describe("totals", () => {
  it("adds turns to a session's totals and its day's, and sums rows into groups with a cost per currency", () => {
    let usage = withTurn(
      emptyUsage(),
      { inputTokens: 1, outputTokens: 2, cachedTokens: 0, cost: { amount: 0.1, currency: "USD" } },
      Date.parse("2026-11-25T23:00:00Z"),
    );
    usage = withTurn(usage, { inputTokens: 3, outputTokens: 4, cachedTokens: 5, cost: { amount: 0.2, currency: "USD" } }, Date.parse("2026-11-26T01:00:00Z"));
    expect(usage).toMatchObject({ inputTokens: 4, outputTokens: 6, cachedTokens: 5, turns: 2, cost: { amount: 0.3, currency: "USD" } });
    expect(Object.keys(usage.days)).toEqual(["2026-11-25", "2026-11-26"]);
    const rows = [
      { session: "a", machine: "m1", agent: "claude", token: "ann", day: "2026-11-25", totals: usage.days["2026-11-25"]! },
      { session: "a", machine: "m1", agent: "claude", token: "ann", day: "2026-11-26", totals: usage.days["2026-11-26"]! },
      {
        session: "b",
        machine: "m2",
        agent: "codex",
        token: "bob",
        day: "2026-11-26",
        totals: { inputTokens: 10, outputTokens: 0, cachedTokens: 0, turns: 1, cost: { amount: 5, currency: "credits" } },
      },
    ];
    const byAgent = sumUsage(rows, "agent");
    expect(byAgent.groups).toEqual([
      { key: "claude", inputTokens: 4, outputTokens: 6, cachedTokens: 5, turns: 2, sessions: 1, costs: [{ amount: 0.3, currency: "USD" }] },
      { key: "codex", inputTokens: 10, outputTokens: 0, cachedTokens: 0, turns: 1, sessions: 1, costs: [{ amount: 5, currency: "credits" }] },
    ]);
    expect(byAgent.total).toMatchObject({
      inputTokens: 14,
      turns: 3,
      sessions: 2,
      costs: [
        { amount: 0.3, currency: "USD" },
        { amount: 5, currency: "credits" },
      ],
    });
    expect(sumUsage(rows, "day").groups.map((g) => [g.key, g.sessions])).toEqual([
      ["2026-11-25", 1],
      ["2026-11-26", 2],
    ]);
  });
});
