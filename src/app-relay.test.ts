/**
 * The relay's route before the router (app.ts, `createRelayApp`): the worker's entry sends exactly the
 * requests `isRelayPost` recognises to an app of that route alone. This holds the two apps to the same
 * chain for every such request (the same middleware and handlers, in the same order, with the same
 * parameters), and the recognition to the paths the whole app routes to the relay's POST and nothing else.
 * The answers themselves, compared in workerd: app-relay.workers.test.ts.
 */
import { describe, expect, it } from "vitest";
import { createApp, createRelayApp } from "./app";
import { isRelayPost, RELAY_POST_ACCESS } from "./http/relay-post";

type App = ReturnType<typeof createApp>;

/** What the app's router runs for a request: each handler's route (method, path), its name, and the parameters. */
function chain(app: App, method: string, path: string): string[] {
  const [matched, stash] = app.router.match(method, path) as [
    [[unknown, { method: string; path: string; handler: { name: string } }], Record<string, string | number>][],
    string[] | undefined,
  ];
  return matched.map(([[, route], params]) => {
    // RegExpRouter gives each parameter's index in a shared stash, TrieRouter the value itself.
    const values = Object.fromEntries(Object.entries(params).map(([name, value]) => [name, typeof value === "number" ? stash?.[value] : value]));
    return `${route.method} ${route.path} ${route.handler.name || "(anonymous)"} ${JSON.stringify(Object.entries(values).sort())}`;
  });
}

const RELAY_POSTS = [
  "/v1/acp/s1",
  "/v1/acp/s1?agent=mock",
  "/machines/laptop/v1/acp/s1",
  "/machines/laptop/v1/acp/stages?agent=mock&x=1",
  "/machines/laptop/v1/acp/not%20an%20id",
  "/machines/-bad-/v1/acp/x",
  "/v1/acp/health",
  "/machines/ports/v1/acp/x",
];

const NOT_RELAY_POSTS: [method: string, path: string][] = [
  ["GET", "/v1/acp/s1"],
  ["DELETE", "/v1/acp/s1"],
  ["POST", "/v1/acp"],
  ["POST", "/v1/acp/"],
  ["POST", "/v1/acp/s1/"],
  ["POST", "/v1/acp/s1/more"],
  ["POST", "/V1/acp/s1"],
  ["POST", "/machines//v1/acp/s1"],
  ["POST", "/machines/a/b/v1/acp/s1"],
  ["POST", "/acp"],
  ["POST", "/machines/laptop/acp"],
];

describe("the relay's POST before the router", () => {
  const whole = createApp();
  const relay = createRelayApp();

  it("runs, for each request it recognises, the whole app's chain for it: the same middleware and handlers, in order, with the same parameters", () => {
    for (const path of RELAY_POSTS) {
      const request = new Request(`https://runtime.test${path}`, { method: "POST" });
      expect(isRelayPost(request), path).toBe(true);
      const pathname = new URL(request.url).pathname;
      const expected = chain(whole, "POST", pathname);
      // The relay's own handler is in it (and nothing else of the whole app's routes is).
      expect(
        expected.some((step) => step.includes("postToAcpServer")),
        path,
      ).toBe(true);
      expect(chain(relay, "POST", pathname), path).toEqual(expected);
    }
  });

  it("runs the steps http/relay-post.ts mirrors in its `admit`, and no other: a step added here must be asked there too", () => {
    // What `admit` asks of the access guard (`accessRefusal` with the role and the machine in the path; no
    // `withDirectory`, no session's or body's machine): a route declaring more must be mirrored there first.
    expect(RELAY_POST_ACCESS).toEqual({ role: "member", machine: true });
    // hostPreview: step 1; authenticate: 2; auditTrail: `relayPost`'s audit; bodyLimitUnlessFile: 3;
    // accessGuard: 4; postToAcpServer: 5 and `relayAcpMessage`.
    for (const path of ["/v1/acp/s1", "/machines/laptop/v1/acp/s1"]) {
      const steps = chain(relay, "POST", path).map((step) => step.split(" ")[2]);
      expect(steps, path).toEqual(["hostPreview", "authenticate", "auditTrail", "bodyLimitUnlessFile", "accessGuard", "postToAcpServer"]);
    }
  });

  it("recognises nothing else", () => {
    for (const [method, path] of NOT_RELAY_POSTS) expect(isRelayPost(new Request(`https://runtime.test${path}`, { method })), `${method} ${path}`).toBe(false);
  });
});
