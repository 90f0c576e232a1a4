/**
 * What `acp.post` answered, read in one place: the agent's answer, or that the server's agent is not
 * running (a typed result of the operation: `AcpNotRunning`), which the machine's object may answer by
 * starting the agent again for a recorded session (session-calls.ts) and an ACP WebSocket by closing
 * (acp-transport/connection-registry.ts). To a client it stays the problem it always was.
 */
import type { AcpPostAnswer, AcpPostResult } from "@agent-runtime/protocol/ops/acp";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { ProblemInit } from "@agent-runtime/protocol/problems";

/** A relayed message's outcome: `notRunning` marks the failure that says its server's agent is not running. */
export type AcpPostOutcome = Outcome<AcpPostResult> | { ok: false; problem: ProblemInit; notRunning: true };

export function acpPostOutcome(outcome: Outcome<AcpPostAnswer>): AcpPostOutcome {
  if (!outcome.ok) {
    // A sidecar of an older release says it as an extension of its problem.
    return outcome.problem.extensions?.notRunning === true ? notRunning(outcome.problem.detail) : outcome;
  }
  const answer = outcome.value;
  return answer.status === 404 ? notRunning(answer.detail) : { ok: true, value: answer };
}

function notRunning(detail: string): AcpPostOutcome {
  return { ok: false, notRunning: true, problem: { code: "invalid_request", detail, extensions: { notRunning: true } } };
}
