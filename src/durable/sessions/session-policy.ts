/**
 * A session's part in the permission policy (docs/architecture.md, "The permission policy"): a client may
 * name a session's own policy on `session/new` (`_meta["agent-runtime/policy"]`), stricter than the
 * team's where the team's rules speak, and a client's answer to a request the policy answered is refused.
 */
import type { JsonRpcId, JsonRpcMessage } from "@agent-runtime/protocol/acp";
import { PermissionPolicy } from "@agent-runtime/protocol/policy";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import type { AcpPostResult } from "@agent-runtime/protocol/ops/acp";
import { answerOf } from "@agent-runtime/protocol/acp-meaning";
import { z } from "zod";

export const POLICY_META = "agent-runtime/policy";

/** A client's answer to a request the policy answered already: 409, the agent had its answer. */
export function policyAnswerRefusal(message: JsonRpcMessage, answeredByPolicy: (id: JsonRpcId) => boolean): ProblemInit | null {
  if (message.method !== undefined || message.id === undefined || !answeredByPolicy(message.id)) return null;
  return {
    code: "conflict",
    detail: `request ${JSON.stringify(message.id)} was answered by the team's permission policy: the agent has its answer (the session's transcript says which rule)`,
  };
}

const WithPolicy = z.object({ _meta: z.object({ [POLICY_META]: z.unknown() }).passthrough() }).passthrough();

/** The policy a `session/new` names for its session (null: none named); a malformed one is a 400 before the agent sees it. */
export function sessionPolicyIn(message: JsonRpcMessage): Outcome<PermissionPolicy> | null {
  if (message.method !== "session/new") return null;
  const meta = WithPolicy.safeParse(message.params);
  if (!meta.success || meta.data._meta[POLICY_META] === undefined) return null;
  const policy = PermissionPolicy.safeParse(meta.data._meta[POLICY_META]);
  if (policy.success) return { ok: true, value: policy.data };
  const issue = policy.error.issues[0];
  return {
    ok: false,
    problem: {
      code: "invalid_request",
      detail: `_meta["${POLICY_META}"] is not a permission policy: ${issue ? `${issue.path.join(".")}: ${issue.message}` : "invalid"}`,
    },
  };
}

/** The sessionId a `session/new` answer names, if it succeeded. */
export function startedSessionId(result: AcpPostResult): string | null {
  if (result.status !== 200) return null;
  const started = z.object({ sessionId: z.string() }).safeParse(answerOf(result.body).result);
  return started.success ? started.data.sessionId : null;
}
