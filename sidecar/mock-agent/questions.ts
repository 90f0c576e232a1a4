/**
 * The mock's questions and its bill (both `mock` and `mock-login`): `/elicit form` asks the person for one
 * string field `name` with ACP's `elicitation/create` (form mode) and answers `Hello, <name>`, `declined`
 * or `cancelled`; `/elicit url` asks them to open a link (URL mode). After every turn the mock reports
 * what it cost: input tokens = the prompt's length in characters, output tokens = the answer's, $0.000001
 * a token, as the turn's `usage` (in `session/prompt`'s answer) and a `usage_update` (context and the
 * session's cumulative cost).
 */
import { randomUUID } from "node:crypto";
import { type AgentContext, methods } from "@agentclientprotocol/sdk";
import { z } from "zod";

const Accepted = z.object({ content: z.record(z.string(), z.unknown()).nullish() }).passthrough();

export const USD_PER_TOKEN = 0.000001;
/** The context window the mock says it has. */
const CONTEXT_SIZE = 200_000;

export async function elicit(client: AgentContext, sessionId: string, mode: string, signal: AbortSignal): Promise<string> {
  const answer =
    mode === "url"
      ? await client.request(
          methods.client.elicitation.create,
          {
            sessionId,
            mode: "url",
            elicitationId: `mock-${randomUUID().slice(0, 8)}`,
            url: "https://example.com/mock-agent/authorize",
            message: "Open this page to continue",
          },
          { cancellationSignal: signal, stopWaitingOnCancel: true },
        )
      : await client.request(
          methods.client.elicitation.create,
          {
            sessionId,
            mode: "form",
            message: "What is your name?",
            requestedSchema: { type: "object", properties: { name: { type: "string", title: "Name" } }, required: ["name"] },
          },
          { cancellationSignal: signal, stopWaitingOnCancel: true },
        );
  if (answer.action === "decline") return "declined";
  if (answer.action !== "accept") return "cancelled";
  if (mode === "url") return "Opened the page";
  const accepted = Accepted.safeParse(answer);
  return `Hello, ${String((accepted.success ? accepted.data.content?.name : undefined) ?? "")}`;
}

/** What a session has used so far: its context and cumulative cost. */
export interface Bill {
  tokens: number;
}

/** The turn's usage (for `session/prompt`'s answer), after the `usage_update` that says the session's totals. */
export async function reportUsage(client: AgentContext, sessionId: string, bill: Bill, prompt: string, answer: string) {
  const inputTokens = prompt.length;
  const outputTokens = answer.length;
  bill.tokens += inputTokens + outputTokens;
  await client.notify(methods.client.session.update, {
    sessionId,
    update: {
      sessionUpdate: "usage_update",
      used: Math.min(bill.tokens, CONTEXT_SIZE),
      size: CONTEXT_SIZE,
      cost: { amount: Number((bill.tokens * USD_PER_TOKEN).toFixed(6)), currency: "USD" },
    },
  });
  return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
}
