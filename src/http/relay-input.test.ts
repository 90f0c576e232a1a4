/**
 * The relay's path and query read by hand (relay-input.ts) against a route that declares the same schemas
 * and lets `@hono/zod-openapi` validate them: on a table of server ids and queries, the same answer (the
 * values read, or the same 400, word for word), and the common forms taken by the hand-written check.
 */
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { AppEnv } from "../env";
import { commonRelayInput, RelayParams, RelayQuery, relayInput } from "./relay-input";
import { validationHook } from "./validation";

const declared = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
  createRoute({
    method: "post",
    path: "/machines/{machine}/acp/{server_id}",
    request: { params: RelayParams, query: RelayQuery },
    responses: { 200: { description: "what was read" } },
  }),
  (c) => c.json({ serverId: c.req.valid("param").server_id, agent: c.req.valid("query").agent ?? null }, 200),
);

const byHand = new Hono<AppEnv>().post("/machines/:machine/acp/:server_id", (c) => {
  const input = relayInput(c);
  return input instanceof Response ? input : c.json({ serverId: input.serverId, agent: input.agent ?? null });
});

const TABLE: [path: string, common: boolean][] = [
  ["s1", true],
  ["s1?agent=mock", true],
  ["stages?agent=claude-acp", true],
  [`${"a".repeat(128)}?agent=${"b".repeat(64)}`, true],
  ["a.b_c-d", true],
  ["A9", true],
  // Left to the schemas, which accept them
  ["s1?", false],
  ["s1?other=1", false],
  ["s1?agent=mock&other=1", false],
  ["s1?other=1&agent=mock", false],
  ["s1?agent=%6Dock", false],
  // Refused by the schemas, with their words
  ["s1?agent=", false],
  ["s1?agent=Mock", false],
  ["s1?agent=mock&agent=codex", false],
  [`s1?agent=${"b".repeat(65)}`, false],
  ["s1?agent=-x", false],
  ["a..b", false],
  [".hidden", false],
  ["-x", false],
  [`${"a".repeat(129)}`, false],
  ["not%20an%20id", false],
  ["caf%C3%A9", false],
  ["bad%20id?agent=Bad", false],
];

describe("the relay's path and query read by hand", () => {
  it("answers as a route that declares RelayParams and RelayQuery does", async () => {
    for (const [rest, common] of TABLE) {
      const url = `https://runtime.test/machines/laptop/acp/${rest}`;
      const [want, got] = await Promise.all([declared.request(url, { method: "POST" }), byHand.request(url, { method: "POST" })]);
      const wanted = { status: want.status, type: want.headers.get("content-type"), body: await want.text() };
      expect({ status: got.status, type: got.headers.get("content-type"), body: await got.text() }, rest).toEqual(wanted);
      const serverId = decodeURIComponent(new URL(url).pathname.split("/").at(-1) ?? "");
      expect(commonRelayInput(url, serverId) !== null, `${rest} taken by hand`).toBe(common);
    }
  });
});
