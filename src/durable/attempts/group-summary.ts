/** What a trigger's attempt group says on its issue when it ended: each attempt's end, check, changes and branch. */
import type { Attempt, AttemptGroup } from "@agent-runtime/protocol/attempts";

function checkWord(a: Attempt): string {
  if (a.verdict === "passed") return "passed";
  if (a.verdict === "failed") return a.check?.timedOut ? "failed (timed out)" : `failed (exit ${a.check?.exitCode ?? "?"})`;
  if (a.verdict === "no_check") return "no check";
  return "–";
}

export function summaryOf(group: AttemptGroup): string {
  const passed = group.attempts.filter((a) => a.verdict === "passed").length;
  const head =
    group.state === "cancelled"
      ? `Attempt group \`${group.id}\` was cancelled.`
      : `Attempt group \`${group.id}\` finished: ${group.attempts.length} attempts${group.check ? `, ${passed} passed \`${group.check.command.slice(0, 200)}\`` : ""}.`;
  const rows = group.attempts.map((a) => {
    const changes = a.changes ? `${a.changes.files} files, +${a.changes.added} −${a.changes.removed}` : "–";
    return `| ${a.n} | ${a.agent} | ${a.machine} | ${a.state.replace("_", " ")} | ${checkWord(a)} | ${changes} | \`${a.branch}\` |`;
  });
  return [
    head,
    "",
    "| # | agent | machine | state | check | changes | branch |",
    "|---|---|---|---|---|---|---|",
    ...rows,
    "",
    `Base: \`${group.base.branch ?? group.base.commit.slice(0, 12)}\` at ${group.base.commit.slice(0, 12)}. Compare and pick: \`GET /v1/attempts/${group.id}\`.`,
  ].join("\n");
}
