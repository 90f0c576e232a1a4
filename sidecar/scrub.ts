/**
 * Secrets out of text the runtime passes on to callers (an agent's stderr in an error): the values of
 * this machine's secret-looking environment variables, and well-known token shapes.
 */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH/i;
const TOKEN_SHAPES: [RegExp, string][] = [
  [/\bsk-[A-Za-z0-9_-]{16,}/g, "[redacted]"],
  [/\bAIza[0-9A-Za-z_-]{20,}/g, "[redacted]"],
  [/\b(mt2|art)\.[A-Za-z0-9._-]{16,}/g, "[redacted]"],
  [/(\bBearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, "$1[redacted]"],
];

export function scrubSecrets(text: string, env: NodeJS.ProcessEnv = process.env): string {
  let out = text;
  for (const [name, value] of Object.entries(env)) {
    if (value && value.length >= 8 && SECRET_NAME.test(name)) out = out.split(value).join("[redacted]");
  }
  for (const [shape, replacement] of TOKEN_SHAPES) out = out.replace(shape, replacement);
  return out;
}

/** The last lines of an agent's stderr, as a caller may see them: at most `lines` lines and 2,000 characters, secrets removed. */
export function stderrCause(stderr: string, lines = 20): string | null {
  const tail = stderr.trim().split("\n").slice(-lines).join("\n").slice(-2000).trim();
  return tail ? scrubSecrets(tail) : null;
}
