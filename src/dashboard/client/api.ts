/**
 * The page's one way to the API: same-origin fetches carrying the sign-in cookie (HttpOnly: no script
 * here reads it) and the header that marks a change as the dashboard's own (no cross-site form can send
 * it). A 401 means the sign-in ended: the app shows the sign-in form again.
 */
import { takeEvents } from "./sse";

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

export async function api(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("x-agent-runtime-csrf", "1");
  if (init.body !== undefined && typeof init.body === "string" && !headers.has("content-type")) headers.set("content-type", "application/json");
  const res = await fetch(path, { ...init, headers, credentials: "same-origin" });
  if (res.status === 401) {
    onUnauthorized();
    throw new ApiError(401, "the sign-in ended");
  }
  return res;
}

/** A JSON answer, or an ApiError carrying the problem's detail. */
export async function apiJson<T>(path: string, init?: RequestInit): Promise<T> {
  const res = await api(path, init);
  const body = res.status === 204 ? null : ((await res.json().catch(() => null)) as Record<string, unknown> | null);
  if (!res.ok)
    throw new ApiError(
      res.status,
      typeof body?.detail === "string" ? body.detail : `HTTP ${res.status}`,
      typeof body?.type === "string" ? body.type : null,
      body,
    );
  return body as T;
}

/** POST (or another method) a JSON body, read a JSON answer. */
export function send<T>(path: string, body?: unknown, method = "POST", headers?: HeadersInit): Promise<T> {
  return apiJson<T>(path, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }), ...(headers ? { headers } : {}) });
}

/** Follow an SSE stream with fetch (EventSource sends no custom header); resolves when the stream ends. */
export async function followSse(path: string, onEvent: (event: string, data: unknown) => void, signal: AbortSignal): Promise<void> {
  const res = await api(path, { headers: { accept: "text/event-stream" }, signal });
  if (!res.ok || !res.body) throw new ApiError(res.status, `stream: HTTP ${res.status}`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const { events, rest } = takeEvents(buffer + value);
    buffer = rest;
    for (const e of events) onEvent(e.event, e.data);
  }
}

export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** A machine's API (`/machines/<id>/v1`). */
export const machineApi = (machine: string): string => `/machines/${encodeURIComponent(machine)}/v1`;
