/**
 * The team's sandbox rules end to end (docs/architecture.md, "Sandboxes: the team's rules"), on real
 * bubblewrap: the worker decides by the origin of the work, the sidecar encloses the agent. A GitHub
 * trigger's task runs under its rule (`workspace`, no network) and its mock agent cannot read a planted
 * `~/.ssh/id_ed25519`; a person's session on the same machine, with no rule for it, runs as `full` (the
 * default for people, said on its record) and reads it. A session started under a rule comes back after
 * a sidecar SIGKILL in the same sandbox, though the rules changed since (it never loses its sandbox on a
 * resume).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createHmac, randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSession, rpc } from "./acp-helpers";
import { startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime;
let home: string;
const KEY = `PLANTED-KEY-${randomBytes(8).toString("hex")}`;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "sandbox-origins-home-"));
  mkdirSync(join(home, ".ssh"), { recursive: true });
  writeFileSync(join(home, ".ssh", "id_ed25519"), `${KEY}\n`, { mode: 0o600 });
  rt = await startRuntime({ machines: [] });
  await rt.addSidecar("local", { HOME: home });
});
afterAll(async () => {
  await rt?.dispose();
  rmSync(home, { recursive: true, force: true });
});

const json = (method: string, body: unknown): RequestInit => ({ method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

type Entry = { kind: string; text?: string };
const transcriptText = async (session: string) =>
  (((await (await rt.api(`/v1/sessions/${session}/transcript`)).json()) as { entries: Entry[] }).entries ?? []).map((e) => e.text ?? "").join("\n");

describe("the sandbox of each origin, enforced", () => {
  it("a trigger's task runs under its rule and cannot read ~/.ssh; a person's session, with no rule, runs as full", async () => {
    const put = await rt.api(
      "/v1/config/policy",
      json("PUT", {
        rules: [],
        sandbox: [{ name: "triggered", match: { origins: ["trigger"] }, profile: "workspace", network: { mode: "none" } }],
      }),
    );
    expect(put.status, await put.clone().text()).toBe(200);
    const secret = "whsec-origins-0123456789";
    const created = await rt.api(
      "/v1/triggers",
      json("POST", {
        kind: "github",
        secret,
        events: [{ on: "issues.labeled", label: "agent" }],
        task: { machine: "local", agent: "mock", cwd: rt.dir, prompt: "/sh cat ~/.ssh/id_ed25519" },
      }),
    );
    expect(created.status, await created.clone().text()).toBe(201);
    const trigger = (await created.json()) as { deliveryPath: string };
    const body = JSON.stringify({
      action: "labeled",
      label: { name: "agent" },
      issue: { number: 1, title: "t", body: "", html_url: "https://github.com/a/b/issues/1" },
      repository: { full_name: "a/b" },
      sender: { login: "ada" },
    });
    const delivered = await fetch(`${rt.url}${trigger.deliveryPath}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": "origins-1",
        "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
      },
      body,
    });
    expect(delivered.status).toBe(202);
    const { task } = (await delivered.json()) as { task: string };
    let ended: { state: string; origin: string; session: string | null } = { state: "", origin: "", session: null };
    await waitFor(async () => {
      ended = (await (await rt.api(`/v1/tasks/${task}`)).json()) as typeof ended;
      return ended.state !== "queued" && ended.state !== "running" && ended.state !== "waiting";
    }, "the trigger's task to end");
    expect(ended.origin).toBe("trigger");
    const record = (await (await rt.api(`/v1/sessions/${ended.session}`)).json()) as { sandbox: { requested: { profile: string }; ruleName: string } };
    expect(record.sandbox).toMatchObject({ requested: { profile: "workspace", network: { mode: "none" } }, ruleName: "triggered" });
    const inTask = await transcriptText(ended.session!);
    expect(inTask).toMatch(/Ran cat ~\/.ssh\/id_ed25519: exit code [1-9]/);
    expect(inTask).not.toContain(KEY);

    // A person's session: no rule for it, so today's rights (said as full), and the same line reads the key.
    const acpId = await openSession(rt, "origins-person");
    const turn = await rpc(rt, "origins-person", {
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId: acpId, prompt: [{ type: "text", text: "/sh cat ~/.ssh/id_ed25519" }] },
    });
    expect(turn.status).toBe(200);
    const listed = (await (await rt.api("/v1/sessions")).json()) as {
      sessions: { id: string; serverId: string; sandbox: { origin: string; requested: { profile: string } } }[];
    };
    const person = listed.sessions.find((s) => s.serverId === "origins-person")!;
    expect(person.sandbox).toMatchObject({ origin: "session", requested: { profile: "full" } });
    await waitFor(async () => (await transcriptText(person.id)).includes(KEY), "the person's session to read the key");
  });

  it("a session comes back after a sidecar SIGKILL in the sandbox it was started in, though the rules changed since", async () => {
    const put = await rt.api(
      "/v1/config/policy",
      json("PUT", { rules: [], sandbox: [{ name: "people", match: { origins: ["session"] }, profile: "workspace", network: { mode: "none" } }] }),
    );
    expect(put.status).toBe(200);
    await waitFor(async () => {
      const status = (await (await rt.api("/v1/config/policy/status")).json()) as { machines: { machine: string; version: string | null }[] };
      return status.machines.some((m) => m.machine === "local" && m.version === put.headers.get("etag"));
    }, "the machine to hold the policy");
    const acpId = await openSession(rt, "origins-restored");
    const prompt = (id: number) =>
      rpc(rt, "origins-restored", {
        jsonrpc: "2.0",
        id,
        method: "session/prompt",
        params: { sessionId: acpId, prompt: [{ type: "text", text: "/sh cat ~/.ssh/id_ed25519" }] },
      });
    expect((await prompt(3)).status).toBe(200);
    const listed = (await (await rt.api("/v1/sessions")).json()) as { sessions: { id: string; serverId: string }[] };
    const session = listed.sessions.find((s) => s.serverId === "origins-restored")!.id;
    await waitFor(async () => /Ran cat ~\/.ssh\/id_ed25519: exit code [1-9]/.test(await transcriptText(session)), "the first turn to fail to read");

    // The rules now leave people's sessions as full; the sidecar dies and comes back.
    expect((await rt.api("/v1/config/policy", json("PUT", { rules: [] }))).status).toBe(200);
    await rt.sidecars.get("local")!.stop("SIGKILL");
    await rt.addSidecar("local", { HOME: home });
    expect((await prompt(4)).status).toBe(200);
    await waitFor(
      async () => ((await transcriptText(session)).match(/Ran cat ~\/.ssh\/id_ed25519: exit code [1-9]/g) ?? []).length === 2,
      "the second turn to end",
    );
    expect(await transcriptText(session)).not.toContain(KEY);
    const record = (await (await rt.api(`/v1/sessions/${session}`)).json()) as { sandbox: unknown };
    expect(record.sandbox).toMatchObject({ origin: "session", requested: { profile: "workspace", network: { mode: "none" } }, ruleName: "people" });
  });
});
