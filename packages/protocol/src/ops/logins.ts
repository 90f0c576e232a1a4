/** The tunnel's login operations: an agent's login asked, started (a value kept, a terminal, its own flow), removed. */
import { z } from "zod";
import { AgentLogin, LoginRemoved, LoginRequest, LoginStarted } from "../logins";
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
  "logins.remove": { deadlineMs: MINUTE, args: z.object({ agent: AgentId }), result: LoginRemoved },
} as const satisfies Record<string, OpDefinition>;
