/**
 * The `mock-login` agent's login (the mock started with `--require-login`): it refuses sessions with
 * ACP's `auth_required` error until it is logged in, and offers the ways the registry's agents do
 * without a model: a terminal login (`mock-agent login`, a device-code flow in miniature: it prints
 * `code: <6 digits>` and waits for those digits on its terminal, then writes a credentials file under its
 * home), an `env_var` method (`MOCK_AGENT_KEY`: any non-empty value logs that process in), and a flow of
 * its own (`mock-browser`: `authenticate` asks the person to open a page, ACP's URL elicitation scoped to
 * that request, and keeps the credentials when they accept). `logout` removes the file. Its home is
 * MOCK_AGENT_HOME (default ~/.mock-agent), so each machine's mock is its own. With
 * MOCK_AGENT_REFUSE_AT=prompt it starts sessions and refuses each turn instead (as Claude Code's adapter).
 */
import { randomInt } from "node:crypto";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

export const MOCK_HOME = process.env.MOCK_AGENT_HOME ?? join(homedir(), ".mock-agent");
const CREDENTIALS = join(MOCK_HOME, "credentials.json");
export const KEY_VAR = "MOCK_AGENT_KEY";
export const TERMINAL_METHOD = "mock-terminal";
export const KEY_METHOD = "mock-key";
export const BROWSER_METHOD = "mock-browser";
/** The page its own flow asks a person to open. */
export const BROWSER_URL = "https://example.com/mock-agent/device";

/** What `initialize` offers: the terminal method re-runs this agent's command with `login` appended (ACP's terminal auth). */
export const LOGIN_METHODS = [
  { type: "terminal", id: TERMINAL_METHOD, name: "Log in in a terminal", description: "Type back the code it shows", args: ["login"] },
  { type: "env_var", id: KEY_METHOD, name: `Use ${KEY_VAR}`, vars: [{ name: KEY_VAR }] },
  // No `type`: ACP's agent method, the agent's own flow.
  { id: BROWSER_METHOD, name: "Log in in a browser", description: "Open the page it shows, then say it is done" },
];

let keyedIn = false;

export function loggedIn(): boolean {
  return keyedIn || existsSync(CREDENTIALS);
}

/** Keep the credentials (a login that lasts: every later process of the agent reads them). */
export function keepCredentials(): void {
  mkdirSync(MOCK_HOME, { recursive: true });
  writeFileSync(CREDENTIALS, JSON.stringify({ loggedInAt: new Date().toISOString() }), { mode: 0o600 });
}

/** `authenticate` with the env_var method (ACP: a terminal method is never passed to the agent; the browser flow is main.ts's). */
export function authenticate(methodId: string): boolean {
  if (methodId !== KEY_METHOD || (process.env[KEY_VAR] ?? "").trim() === "") return false;
  keyedIn = true;
  return true;
}

export function logout(): void {
  keyedIn = false;
  rmSync(CREDENTIALS, { force: true });
}

/** `mock-agent login`: show a code, read lines until one is that code, then keep the credentials (exit 0); input ended first: exit 1. */
export function runLogin(): void {
  const code = String(randomInt(0, 1_000_000)).padStart(6, "0");
  process.stdout.write(`To log in, type this code and press Enter.\ncode: ${code}\n`);
  const lines = createInterface({ input: process.stdin, terminal: false });
  let done = false;
  lines.on("line", (line) => {
    if (line.trim() !== code) {
      process.stdout.write("That is not the code; try again.\n");
      return;
    }
    done = true;
    keepCredentials();
    process.stdout.write("Logged in.\n");
    process.exit(0);
  });
  lines.on("close", () => {
    if (!done) process.exit(1);
  });
}
