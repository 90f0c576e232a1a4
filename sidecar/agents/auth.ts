/**
 * Logging in without anyone at the keyboard: an agent that offers an ACP `env_var` authentication method
 * (e.g. codex-acp's "Use OPENAI_API_KEY") whose variables are all set on this machine is authenticated by
 * the runtime itself, right after `initialize`, so a relay client never has to know it must call
 * `authenticate` first. Methods that need a person (a browser login) are never chosen.
 */
import { z } from "zod";

const InitializeResult = z.object({
  authMethods: z
    .array(z.object({ id: z.string(), type: z.string().optional(), vars: z.array(z.object({ name: z.string() })).optional() }).passthrough())
    .optional(),
});

/** The id of the first method the environment satisfies by itself, or null. */
export function envAuthMethod(initializeResult: unknown, env: NodeJS.ProcessEnv): string | null {
  const parsed = InitializeResult.safeParse(initializeResult);
  if (!parsed.success) return null;
  for (const method of parsed.data.authMethods ?? []) {
    if (method.type !== "env_var" || !method.vars?.length) continue;
    if (method.vars.every((v) => (env[v.name] ?? "").trim() !== "")) return method.id;
  }
  return null;
}
