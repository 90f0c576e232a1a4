/**
 * What the workers tier's trust tests share: a request to the worker as a token (none: no Authorization),
 * and fake sidecars connected for one test and dropped after it.
 */
import { SELF } from "cloudflare:test";
import { afterEach, vi } from "vitest";
import { FakeSidecar } from "./fake-sidecar";

export const BASE = "https://runtime.test";

/** A request to the worker with `token` as its bearer (a JSON body says so). */
export function as(token: string, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (token) headers.set("authorization", `Bearer ${token}`);
  if (typeof init.body === "string") headers.set("content-type", "application/json");
  return SELF.fetch(`${BASE}${path}`, { ...init, headers });
}

/** `connect(machine)` for the file's tests: each sidecar it connects is dropped after its test, and mocks restored. */
export function sidecarsPerTest(): (machine: string) => Promise<FakeSidecar> {
  const sidecars: FakeSidecar[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const sidecar of sidecars.splice(0)) if (!sidecar.closed) sidecar.drop();
  });
  return async (machine) => {
    const sidecar = await FakeSidecar.connect(machine);
    sidecars.push(sidecar);
    return sidecar;
  };
}
