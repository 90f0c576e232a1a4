/**
 * The error vocabulary shared by the worker and the sidecar.
 *
 * Every failure, wherever it happens, is one of these codes; the worker turns it
 * into an RFC 9457 `application/problem+json` body with the status below.
 */
import { z } from "zod";

export const PROBLEMS = {
  invalid_request: { status: 400, title: "Invalid request" },
  unsupported_agent: { status: 400, title: "Unsupported agent" },
  token_invalid: { status: 401, title: "Missing or invalid token" },
  permission_denied: { status: 403, title: "Permission denied" },
  port_not_allowed: { status: 403, title: "Port not allowed" },
  not_found: { status: 404, title: "Not found" },
  agent_not_installed: { status: 404, title: "Agent not installed" },
  not_acceptable: { status: 406, title: "Not acceptable" },
  conflict: { status: 409, title: "Conflict" },
  git_failed: { status: 422, title: "Git refused" },
  session_not_resumable: { status: 409, title: "Session not resumable" },
  precondition_failed: { status: 412, title: "Precondition failed" },
  payload_too_large: { status: 413, title: "Payload too large" },
  unsupported_media_type: { status: 415, title: "Unsupported media type" },
  too_many_processes: { status: 429, title: "Too many processes" },
  too_many_tasks: { status: 429, title: "Too many tasks" },
  internal: { status: 500, title: "Internal error" },
  not_implemented: { status: 501, title: "Not implemented" },
  sandbox_unavailable: { status: 501, title: "Sandbox unavailable" },
  sidecar_outdated: { status: 501, title: "Sidecar outdated" },
  install_failed: { status: 500, title: "Install failed" },
  agent_process_exited: { status: 500, title: "Agent process exited" },
  stream_error: { status: 502, title: "Stream error" },
  port_unreachable: { status: 502, title: "Nothing listening" },
  package_unavailable: { status: 502, title: "Package unavailable" },
  machine_offline: { status: 503, title: "Machine offline" },
  machine_restarted: { status: 503, title: "Machine restarted" },
  /** The platform refused the work under load (an overloaded Durable Object): come back after `Retry-After`. */
  busy: { status: 503, title: "Busy" },
  timeout: { status: 504, title: "Timed out" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof PROBLEMS;

/** A 400's `errors` extension, when a schema refused the request: each field (its path, dotted) and why. */
export const FieldIssues = z.array(z.object({ field: z.string(), message: z.string() }));
export type FieldIssues = z.infer<typeof FieldIssues>;

export const PROBLEM_TYPE_PREFIX = "urn:agent-runtime:error:";

/** What travels between sidecar and worker: a code, a human sentence, optional extensions. */
export interface ProblemInit {
  code: ProblemCode;
  detail: string;
  extensions?: Record<string, unknown>;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  [extension: string]: unknown;
}

export function problemBody(init: ProblemInit): ProblemBody {
  const { status, title } = PROBLEMS[init.code];
  return { ...init.extensions, type: PROBLEM_TYPE_PREFIX + init.code, title, status, detail: init.detail };
}

/** An error that carries a problem code across async boundaries (sidecar handlers, DO calls). */
export class ProblemError extends Error {
  readonly code: ProblemCode;
  readonly extensions: Record<string, unknown> | undefined;
  constructor(code: ProblemCode, detail: string, extensions?: Record<string, unknown>) {
    super(detail);
    this.name = "ProblemError";
    this.code = code;
    this.extensions = extensions;
  }
  toInit(): ProblemInit {
    return { code: this.code, detail: this.message, ...(this.extensions ? { extensions: this.extensions } : {}) };
  }
}
