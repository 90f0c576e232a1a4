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

/** An environment's variables, read one by one. */
type Env = Readonly<Record<string, string | undefined>>;

/**
 * The id of the first method the environment satisfies by itself, or null. `envs` are layered as
 * `{ ...envs[0], ...envs[1] }` would be (a later one wins), but only the variables a method names are
 * read: copying `process.env` (every variable, each a call into the C++ environment) cost a relayed
 * `initialize` ~100 µs of the sidecar's CPU.
 */
export function envAuthMethod(initializeResult: unknown, ...envs: Env[]): string | null {
  const parsed = InitializeResult.safeParse(initializeResult);
  if (!parsed.success) return null;
  const value = (name: string): string => {
    for (let i = envs.length - 1; i >= 0; i--) {
      const v = envs[i]![name];
      if (v !== undefined) return v;
    }
    return "";
  };
  for (const method of parsed.data.authMethods ?? []) {
    if (method.type !== "env_var" || !method.vars?.length) continue;
    if (method.vars.every((v) => value(v.name).trim() !== "")) return method.id;
  }
  return null;
}
