/** The tunnel's login operations: an agent's login asked, started (a value kept, a terminal, its own flow), its flow's question answered, removed. */
import { z } from "zod";
import { AgentLogin, LoginAnswer, LoginRemoved, LoginRequest, LoginStarted } from "../logins";
import { AgentId } from "../values";
import { MINUTE, type OpDefinition } from "./define";

export const LOGIN_OPS = {
  "logins.get": {
    deadlineMs: MINUTE,
    readOnly: true,
    problems: ["unsupported_agent"],
    args: z.object({ agent: AgentId, noCache: z.boolean() }),
    result: AgentLogin,
  },
  "logins.start": { deadlineMs: MINUTE, args: LoginRequest.extend({ agent: AgentId }), result: LoginStarted },
  "logins.answer": { deadlineMs: MINUTE, args: LoginAnswer.extend({ agent: AgentId }), result: AgentLogin },
  "logins.remove": { deadlineMs: MINUTE, args: z.object({ agent: AgentId }), result: LoginRemoved },
} as const satisfies Record<string, OpDefinition>;
