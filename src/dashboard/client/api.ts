/**
 * The page's one way to the API: same-origin fetches carrying the sign-in cookie (HttpOnly: no script
 * here reads it) and the header that marks a change as the dashboard's own (no cross-site form can send
 * it). A 401 means the sign-in ended: the app shows the sign-in form again.
 */
import createClient from "openapi-fetch";
import type { components, paths } from "./api-paths.generated";
import { takeEvents } from "./sse";
import { isJsonObject } from "@agent-runtime/protocol/json";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The problem's `type` (application/problem+json), when the API sent one. */
    readonly type: string | null = null,
    /** The whole problem, its extensions included (e.g. the files a revert would overwrite). */
    readonly problem: Record<string, unknown> | null = null,
  ) {
    super(message);
  }
}

let onUnauthorized: () => void = () => {};
/** What to do when the API refuses the sign-in (the app shows its form). */
export function whenSignedOut(handler: () => void): void {
  onUnauthorized = handler;
}

/** The header that marks a change as the dashboard's own: sent with every call, typed or not. */
const CSRF_HEADER = "x-agent-runtime-csrf";

/** A 401 ends the sign-in for every caller alike: the app shows its form, and the call fails. */
async function signedIn(answer: Promise<Response>): Promise<Response> {
  const res = await answer;
  if (res.status === 401) {
    onUnauthorized();
    throw new ApiError(401, "the sign-in ended");
  }
  return res;
}

export function api(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set(CSRF_HEADER, "1");
  if (init.body !== undefined && typeof init.body === "string" && !headers.has("content-type")) headers.set("content-type", "application/json");
  return signedIn(fetch(path, { ...init, headers, credentials: "same-origin" }));
}

/** A JSON object (an answer's body, a document's entry): its fields are read one by one, each checked (the protocol's guard). */
export const isRecord = isJsonObject;

/** An ApiError from a refused answer: its problem's detail and type when it sent application/problem+json. */
export function refused(status: number, body: unknown): ApiError {
  const problem = isRecord(body) ? body : null;
  return new ApiError(
    status,
    typeof problem?.detail === "string" ? problem.detail : `HTTP ${status}`,
    typeof problem?.type === "string" ? problem.type : null,
    problem,
  );
}

/** The ApiError a refused answer of `api` describes (its body read here: a problem, or whatever came). */
export async function refusal(res: Response): Promise<ApiError> {
  return refused(res.status, await res.json().catch(() => null));
}

/**
 * The typed way to the API: paths, parameters, bodies and answers checked against the routes' own schemas
 * (api-paths.generated.ts, written from the OpenAPI document by `npm run api-types`). Paths are the
 * document's (`/v1/...`): `typed` is the team's API and the default machine's, `typedMachine(id)` one
 * machine's (`/machines/{id}/v1/...`).
 */
function typedClient(baseUrl: string) {
  return createClient<paths, "application/json">({
    baseUrl,
    credentials: "same-origin",
    headers: { [CSRF_HEADER]: "1" },
    fetch: (request) => signedIn(fetch(request)),
  });
}
export const typed = typedClient("");
const machineClients = new Map<string, ReturnType<typeof typedClient>>();
export function typedMachine(machine: string): ReturnType<typeof typedClient> {
  const known = machineClients.get(machine);
  if (known) return known;
  const client = typedClient(`/machines/${encodeURIComponent(machine)}`);
  machineClients.set(machine, client);
  return client;
}

/**
 * A resource as the API document describes it. Where a field has a default it may read as optional here
 * though the worker always sends it (one schema serves the request that may omit it and the answer).
 */
export type ApiSchema<Name extends keyof components["schemas"]> = components["schemas"][Name];

/** The path parameters of a route addressed by `{id}` (a session, a subscription, a schedule...). */
export const byId = (id: string) => ({ params: { path: { id } } });

/** What a typed call answers (openapi-fetch's result): a union of its success, which alone has `data`, and its refusal. */
type Answer = { data?: unknown; error?: unknown; response: Response };
type Success<R> = Extract<R, { data: unknown }>;

/**
 * openapi-fetch puts the body in `data` exactly when the status is a success (2xx) and in `error` otherwise;
 * a refusal without a body has `error` undefined too, so the status, not `error`, tells them apart.
 */
const succeeded = <R extends Answer>(answer: R): answer is Success<R> => answer.response.ok;

/** A typed call's answer, or the ApiError its problem describes. */
export async function must<R extends Answer>(call: Promise<R>): Promise<Success<R>["data"]> {
  const answer = await call;
  if (!succeeded(answer)) throw refused(answer.response.status, answer.error);
  return answer.data;
}

/**
 * Follow an SSE stream with fetch (EventSource sends no custom header); resolves when the stream ends.
 * `lastEventId` resumes it where an earlier reading stopped (`follow.ts` reconnects with it).
 */
export async function followSse(
  path: string,
  onEvent: (event: string, data: unknown, id: string | null) => void,
  signal: AbortSignal,
  lastEventId: string | null = null,
): Promise<void> {
  const headers: Record<string, string> = { accept: "text/event-stream" };
  if (lastEventId !== null) headers["last-event-id"] = lastEventId;
  const res = await api(path, { headers, signal });
  // A refusal is said in the API's words (its problem's detail), as every other call's is.
  if (!res.ok) throw await refusal(res);
  if (!res.body) throw new ApiError(res.status, "stream: no body");
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const { events, rest } = takeEvents(buffer + value);
    buffer = rest;
    for (const e of events) onEvent(e.event, e.data, e.id);
  }
}

export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** A machine's API (`/machines/<id>/v1`). */
export const machineApi = (machine: string): string => `/machines/${encodeURIComponent(machine)}/v1`;
