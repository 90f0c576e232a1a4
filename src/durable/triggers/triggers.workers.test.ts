/**
 * GitHub deliveries (docs/architecture.md, "GitHub triggers"), through the worker as GitHub sends them:
 * a good signature on a matching event starts a task (queued: its machine is away); a bad signature, a
 * replayed delivery (under its id or another), a comment from outside the repository's people and another
 * event start nothing; every delivery is audited.
 */
import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TriggerView as Trigger } from "@agent-runtime/protocol/triggers";
import { FakeSidecar } from "../../../test/workers/fake-sidecar";

const api = (path: string, init: RequestInit = {}) =>
  SELF.fetch(`https://runtime.test${path}`, {
    ...init,
    headers: { authorization: `Bearer ${env.API_TOKEN}`, "content-type": "application/json", ...(init.headers ?? {}) },
  });

const SECRET = "whsec-github-0123456789";

async function signature(secret: string, body: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(body)));
  return `sha256=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** A delivery as GitHub sends it: no bearer, its event, its id, its signature. */
async function deliver(trigger: Trigger, event: string, delivery: string, payload: unknown, secret = SECRET): Promise<Response> {
  const body = JSON.stringify(payload);
  return SELF.fetch(`https://runtime.test${trigger.deliveryPath}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": event,
      "x-github-delivery": delivery,
      "x-hub-signature-256": await signature(secret, body),
    },
    body,
  });
}

const issue = { number: 12, title: "Login fails", body: "The form says 500.", html_url: "https://github.com/acme/app/issues/12" };
const repository = { full_name: "acme/app" };
const labeled = (label: string) => ({ action: "labeled", label: { name: label }, issue, repository, sender: { login: "ada" } });

describe("GitHub triggers", () => {
  it("start a task on a good signature and a matching event, and nothing otherwise", async () => {
    const machine = "gh-machine";
    (await FakeSidecar.connect(machine)).drop();
    const created = await api("/v1/triggers", {
      method: "POST",
      body: JSON.stringify({
        kind: "github",
        secret: SECRET,
        events: [
          { on: "issues.labeled", label: "agent" },
          { on: "issue_comment", prefix: "/agent" },
        ],
        task: { machine, agent: "mock", cwd: "/srv/app", prompt: "Fix #{{number}}: {{title}}\n{{body}}\n{{url}}\n{{comment}}" },
      }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const trigger = (await created.json()) as Trigger;
    expect(trigger.deliveryPath).toBe(`/v1/triggers/${trigger.id}/github`);
    expect(trigger.deliveryUrl).toBe(`https://runtime.test/v1/triggers/${trigger.id}/github`);
    expect(JSON.stringify(trigger)).not.toContain(SECRET);

    const ping = await deliver(trigger, "ping", "d-0", { zen: "Keep it logically awesome." });
    expect(ping.status).toBe(200);
    expect(await ping.json()).toMatchObject({ outcome: "ignored" });

    const started = await deliver(trigger, "issues", "d-1", labeled("agent"));
    expect(started.status).toBe(202);
    const outcome = (await started.json()) as { outcome: string; task: string };
    expect(outcome).toMatchObject({ outcome: "started" });
    const task = (await (await api(`/v1/tasks/${outcome.task}`)).json()) as { state: string; title: string; createdBy: string };
    expect(task).toMatchObject({
      state: "queued",
      title: "Fix #12: Login fails",
      createdBy: `trigger ${trigger.id} (ada)`,
    });

    // The same delivery again, the same signed body under a new id, a wrong signature, another label: nothing starts.
    const replayed = await deliver(trigger, "issues", "d-1", labeled("agent"));
    expect(await replayed.json()).toMatchObject({ outcome: "replayed", task: null });
    const renamed = await deliver(trigger, "issues", "d-1-again", labeled("agent"));
    expect(await renamed.json()).toMatchObject({ outcome: "replayed", task: null, detail: expect.stringContaining("delivery d-1") });
    const forged = await deliver(trigger, "issues", "d-2", labeled("agent"), "not-the-secret-at-all");
    expect(forged.status).toBe(401);
    expect(forged.headers.get("content-type")).toContain("application/problem+json");
    const other = await deliver(trigger, "issues", "d-3", labeled("bug"));
    expect(await other.json()).toMatchObject({ outcome: "ignored" });

    // A comment starting with the prefix does, from the repository's people.
    const by = (login: string, association: string, body = "/agent try again") => ({
      action: "created",
      comment: { body, user: { login }, author_association: association, created_at: new Date().toISOString() },
      issue,
      repository,
    });
    const again = await deliver(trigger, "issue_comment", "d-4", by("bob", "MEMBER"));
    expect(again.status).toBe(202);
    // From anyone else: answered, refused, nothing started.
    const stranger = await deliver(trigger, "issue_comment", "d-4b", by("mallory", "NONE"));
    expect(stranger.status).toBe(403);
    expect(stranger.headers.get("content-type")).toContain("application/problem+json");
    expect(((await stranger.json()) as { detail: string }).detail).toContain("mallory (NONE) may not start");
    const notForUs = await deliver(trigger, "issue_comment", "d-5", by("bob", "MEMBER", "thanks!"));
    expect(await notForUs.json()).toMatchObject({ outcome: "ignored" });

    const tasks = (await (await api(`/v1/tasks?machine=${machine}`)).json()) as { tasks: { id: string }[] };
    expect(tasks.tasks).toHaveLength(2);
    const listed = (await (await api("/v1/triggers")).json()) as { triggers: Trigger[] };
    expect(listed.triggers.find((t) => t.id === trigger.id)?.lastDelivery).toMatchObject({ delivery: "d-5", outcome: "ignored" });

    // Every delivery is in the audit log, the forged one as a 401.
    await expect
      .poll(async () => {
        const audit = (await (await api("/v1/audit?limit=100")).json()) as { entries: { token: string; status: number }[] };
        return audit.entries.filter((e) => e.token.startsWith("(github delivery")).map((e) => e.status);
      })
      .toEqual([200, 202, 200, 200, 401, 200, 202, 403, 200].reverse());

    // A comment trigger that names its people: logins whatever their association, and no association at all.
    const named = await api("/v1/triggers", {
      method: "POST",
      body: JSON.stringify({
        kind: "github",
        secret: SECRET,
        events: [{ on: "issue_comment", prefix: "/agent" }],
        authors: { associations: [], logins: ["Mallory"] },
        task: { machine, agent: "mock", cwd: "/srv/app", prompt: "{{comment}}" },
      }),
    });
    const namedTrigger = (await named.json()) as Trigger;
    expect(namedTrigger.authors).toEqual({ associations: [], logins: ["Mallory"] });
    expect(trigger.authors).toEqual({ associations: ["OWNER", "MEMBER", "COLLABORATOR"], logins: [] });
    expect((await deliver(namedTrigger, "issue_comment", "n-1", by("mallory", "NONE", "/agent one"))).status).toBe(202);
    expect((await deliver(namedTrigger, "issue_comment", "n-2", by("bob", "OWNER", "/agent two"))).status).toBe(403);
    // A comment older than the window is a replay, whatever its id and body.
    const old = { ...by("mallory", "NONE", "/agent three"), comment: { ...by("mallory", "NONE", "/agent three").comment, created_at: "2020-01-01T00:00:00Z" } };
    expect(await (await deliver(namedTrigger, "issue_comment", "n-3", old)).json()).toMatchObject({ outcome: "replayed" });
    expect((await api(`/v1/triggers/${namedTrigger.id}`, { method: "DELETE" })).status).toBe(204);

    // Deleted, its deliveries are refused.
    expect((await api(`/v1/triggers/${trigger.id}`, { method: "DELETE" })).status).toBe(204);
    expect((await deliver(trigger, "issues", "d-6", labeled("agent"))).status).toBe(401);
  });
});
