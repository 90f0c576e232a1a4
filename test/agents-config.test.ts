/**
 * The team's agents document (/v1/config/agents): it pins Gemini CLI to a version; a connected machine
 * installs it, a machine that connects later installs it too, and the status shows it per machine; moving
 * the document to `latest` upgrades them; its non-secret settings reach the agent's process. Real npm
 * installs of @google/gemini-cli (a bundle with no dependencies).
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorCode, problemOf, startRuntime, waitFor, type Runtime } from "./harness";

const INSTALL_MS = 240_000;

type Status = {
  version: string;
  machines: { machine: string; version: string | null; agents: Record<string, { installedVersion: string | null; error: string | null }> }[];
};

let rt: Runtime;
beforeAll(async () => {
  rt = await startRuntime({ machines: ["first"] });
}, 60_000);
afterAll(async () => {
  await rt?.dispose();
});

async function put(document: unknown, ifMatch?: string): Promise<Response> {
  return rt.api("/v1/config/agents", {
    method: "PUT",
    headers: { "content-type": "application/json", ...(ifMatch ? { "if-match": ifMatch } : {}) },
    body: JSON.stringify(document),
  });
}

/** The machine's status once it applied `etag`. */
async function appliedOn(machine: string, etag: string) {
  return waitFor(
    async () => {
      const status = (await (await rt.api("/v1/config/agents/status")).json()) as Status;
      return status.machines.find((m) => m.machine === machine && m.version === etag);
    },
    `${machine} to apply ${etag}`,
    INSTALL_MS,
  );
}

const installedVersion = async (machine: string, agent: string) =>
  ((await (await rt.api(`/machines/${machine}/v1/agents/${agent}`)).json()) as { installedVersion: string | null }).installedVersion;

describe("the team's agents document", () => {
  it("refuses what it cannot hold: a secret-looking setting, a bad version, an unknown field, a stale If-Match", async () => {
    const secret = await problemOf(await put({ agents: { gemini: { env: { GEMINI_API_KEY: "x" } } } }));
    expect(secret.status).toBe(400);
    expect(secret.detail).toContain("looks like a secret");
    expect((await problemOf(await put({ agents: { gemini: { version: "not a version!" } } }))).status).toBe(400);
    expect((await problemOf(await put({ agents: {}, extra: 1 }))).status).toBe(400);
    expect(errorCode(await problemOf(await put({ agents: {} }, '"41"')))).toBe("precondition_failed");
    const empty = await rt.api("/v1/config/agents");
    expect(await empty.json()).toEqual({ agents: {} });
    expect(empty.headers.get("etag")).toBe('"0"');
  });

  it(
    "pins gemini: the connected machine installs it, a machine that connects later too, and the status says so per machine",
    async () => {
      const res = await put({ agents: { gemini: { version: "0.60.0" }, mock: { env: { MOCK_TEAM_SETTING: "from-the-team" } } } }, '"0"');
      expect(res.status, await res.clone().text()).toBe(200);
      const etag = res.headers.get("etag")!;
      const first = await appliedOn("first", etag);
      expect(first.agents.gemini).toEqual({ installedVersion: "0.60.0", error: null });
      expect(await installedVersion("first", "gemini")).toBe("0.60.0");

      await rt.addSidecar("later");
      const later = await appliedOn("later", etag);
      expect(later.agents.gemini).toEqual({ installedVersion: "0.60.0", error: null });
      expect(await installedVersion("later", "gemini")).toBe("0.60.0");

      // The settings reach the agent's process (the machine's own environment would win over them).
      const initialized = await rt.api("/machines/first/v1/acp/team-env?agent=mock", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }),
      });
      expect(initialized.status).toBe(200);
      const { processes } = (await (await rt.api("/machines/first/v1/processes?owner=system")).json()) as {
        processes: { label?: string; pid: number | null }[];
      };
      const agent = processes.find((p) => p.label === "acp:team-env");
      expect((await readFile(`/proc/${agent!.pid}/environ`, "utf8")).split("\0")).toContain("MOCK_TEAM_SETTING=from-the-team");
    },
    INSTALL_MS,
  );

  it(
    "moves every machine to the registry's version when the pin becomes latest",
    async () => {
      const current = (await rt.api("/v1/config/agents")).headers.get("etag")!;
      const res = await put({ agents: { gemini: { version: "latest" } } }, current);
      const etag = res.headers.get("etag")!;
      // No registry is reachable in the tests: the built-in catalog names 0.61.0.
      for (const machine of ["first", "later"]) {
        expect((await appliedOn(machine, etag)).agents.gemini).toEqual({ installedVersion: "0.61.0", error: null });
        expect(await installedVersion(machine, "gemini")).toBe("0.61.0");
      }
      const audit = (await (await rt.api("/v1/audit?limit=20")).json()) as { entries: { method: string; route: string }[] };
      expect(audit.entries.filter((e) => e.method === "PUT" && e.route.includes("/config/agents")).length).toBeGreaterThanOrEqual(2);
    },
    INSTALL_MS,
  );
});
