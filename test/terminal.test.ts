/**
 * Terminals through the worker, the machine's object and the tunnel: a real shell on a PTY, several
 * viewers, output replayed on attach, input, resize, exit, tickets, and clear refusals.
 */
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorCode, startRuntime, waitFor, type Runtime } from "./harness";

let rt: Runtime;

beforeAll(async () => {
  rt = await startRuntime({ machines: ["local"] });
});
afterAll(async () => {
  await rt?.dispose();
});

async function spawn(body: Record<string, unknown>): Promise<{ id: string }> {
  const res = await rt.api("/v1/processes", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string };
}

async function ticket(token = rt.token): Promise<string> {
  const res = await rt.api("/v1/tickets", { method: "POST", headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { ticket: string }).ticket;
}

/** A terminal viewer: everything it received, as text and control frames. */
class Viewer {
  readonly ws: WebSocket;
  output = "";
  readonly controls: { type: string; [k: string]: unknown }[] = [];
  closed = false;
  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.on("message", (data, isBinary) => {
      if (isBinary) this.output += Buffer.from(data as Buffer).toString("utf8");
      else this.controls.push(JSON.parse(String(data)));
    });
    this.ws.on("close", () => {
      this.closed = true;
    });
  }
  send(frame: object): void {
    this.ws.send(JSON.stringify(frame));
  }
  until(what: string, fn: (v: Viewer) => boolean): Promise<Viewer> {
    return waitFor(async () => fn(this) && this, what);
  }
}

/** A WebSocket upgrade the worker refuses: its status and problem body. */
function refusedUpgrade(url: string, headers: Record<string, string> = {}): Promise<{ status: number; problem: { type: string; detail: string } }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on("open", () => reject(new Error(`the upgrade to ${url} was accepted`)));
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, problem: JSON.parse(body) }));
    });
    ws.on("error", () => undefined);
  });
}

function terminalUrl(id: string, accessToken: string, prefix = ""): string {
  return `${rt.url.replace(/^http/, "ws")}${prefix}/v1/processes/${id}/terminal/ws?access_token=${encodeURIComponent(accessToken)}`;
}

describe("terminal", () => {
  it("runs a shell for several viewers: input, output replayed on attach, resize, exit", async () => {
    const shell = await spawn({ command: "sh", tty: true, interactive: true, env: { PS1: "$ " } });
    const first = new Viewer(terminalUrl(shell.id, await ticket()));
    await first.until("ready", (v) => v.controls.some((c) => c.type === "ready" && c.processId === shell.id));
    first.send({ type: "input", data: "echo hi-$((40+2))\n" });
    await first.until("the echo", (v) => v.output.includes("hi-42"));

    // A second viewer (on the named-machine route) sees what was already written, then what comes next.
    const second = new Viewer(terminalUrl(shell.id, await ticket(), "/machines/local"));
    await second.until("the replay", (v) => v.output.includes("hi-42"));

    // The resize reaches the terminal before the keystrokes sent after it (one tunnel, frames in order).
    first.send({ type: "resize", cols: 100, rows: 30 });
    first.send({ type: "input", data: "stty size\n" });
    await second.until("the new size, as the shell sees it", (v) => v.output.includes("30 100"));

    first.send({ type: "close" });
    await first.until("the first viewer to close", (v) => v.closed);
    second.send({ type: "input", data: "exit 3\n" });
    await second.until("the exit frame", (v) => v.controls.some((c) => c.type === "exit" && c.exitCode === 3));
    await second.until("the second viewer to close", (v) => v.closed);
  });

  it("takes the API token as ?access_token= (as the sandbox-agent SDK sends it), and audits who attached", async () => {
    const shell = await spawn({ command: "sh", tty: true, interactive: true });
    const viewer = new Viewer(terminalUrl(shell.id, rt.token));
    await viewer.until("ready", (v) => v.controls.some((c) => c.type === "ready"));
    viewer.send({ type: "bogus" });
    await viewer.until("an error frame for a bad frame", (v) => v.controls.some((c) => c.type === "error"));
    viewer.ws.close();
    await rt.api(`/v1/processes/${shell.id}/kill`, { method: "POST" });
    const audit = (await (await rt.api("/v1/audit?limit=50")).json()) as { entries: { route: string; method: string; status: number }[] };
    expect(audit.entries.some((e) => e.method === "GET" && e.route === "/v1/processes/{id}/terminal/ws" && e.status === 101)).toBe(true);
  });

  it("refuses what is not a running terminal with a clear problem", async () => {
    const pipe = await spawn({ command: "sleep", args: ["30"] });
    const res = await refusedUpgrade(terminalUrl(pipe.id, rt.token));
    expect(res.status).toBe(409);
    expect(res.problem.detail).toMatch(/no terminal/);
    await rt.api(`/v1/processes/${pipe.id}/kill`, { method: "POST" });

    const done = await spawn({ command: "true", tty: true });
    await waitFor(async () => ((await (await rt.api(`/v1/processes/${done.id}`)).json()) as { status: string }).status === "exited", "exit");
    const exited = await refusedUpgrade(terminalUrl(done.id, rt.token));
    expect(exited.status).toBe(409);
    expect(exited.problem.detail).toMatch(/exited/);

    expect(errorCode((await refusedUpgrade(terminalUrl("nope", rt.token))).problem)).toBe("not_found");
    const plain = await rt.api(`/v1/processes/${done.id}/terminal/ws`);
    expect(plain.status).toBe(400);
  });

  it("accepts tickets only in the query of a stream GET, and not once expired or forged", async () => {
    const t = await ticket();
    const asHeader = await rt.api("/v1/processes", { headers: { authorization: `Bearer ${t}` } });
    expect(asHeader.status).toBe(401);
    const onPlainGet = await fetch(`${rt.url}/v1/processes?access_token=${t}`);
    expect(onPlainGet.status).toBe(401);
    // One character of its MAC changed, far enough from the end that every bit of it counts (a base64url
    // string's last character carries padding bits: replacing the last two could leave it the same).
    const changed = t.slice(0, -5) + (t.at(-5) === "A" ? "B" : "A") + t.slice(-4);
    const forged = await fetch(`${rt.url}/v1/processes/x/logs?follow=true&access_token=${changed}`, { headers: { accept: "text/event-stream" } });
    expect(forged.status).toBe(401);
  });

  it("closes a terminal when the token that opened it is revoked, and refuses that token's tickets from then on", async () => {
    const issued = await rt.api("/v1/tokens", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "leaving-lou", role: "member" }),
    });
    const { id, token } = (await issued.json()) as { id: string; token: string };
    const shell = await spawn({ command: "bash", args: ["--noprofile", "--norc"], tty: true, interactive: true });
    const spare = await ticket(token); // minted before the revocation, still within its minute after it
    const viewer = new Viewer(terminalUrl(shell.id, await ticket(token)));
    await viewer.until("ready", (v) => v.controls.some((c) => c.type === "ready"));
    expect((await rt.api(`/v1/tokens/${id}`, { method: "DELETE" })).status).toBe(200);
    // The server's close frame, at once (workerd under miniflare may hold the TCP connection ~10 s longer when the
    // close starts in an RPC rather than a socket event; the browser and the SDK act on the frame).
    await viewer.until("closed by the revocation", (v) => v.ws.readyState >= WebSocket.CLOSING);
    expect(viewer.controls.some((c) => c.type === "error" && String(c.message).includes("revoked"))).toBe(true);
    const refused = await refusedUpgrade(terminalUrl(shell.id, spare));
    expect(refused.status).toBe(401);
    expect(refused.problem.detail).toContain("revoked");
    await rt.api(`/v1/processes/${shell.id}/kill`, { method: "POST" });
  });

  it("gives a viewer-role ticket no terminal", async () => {
    const created = await rt.api("/v1/tokens", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "watcher", role: "viewer" }),
    });
    const viewerToken = ((await created.json()) as { token: string }).token;
    const shell = await spawn({ command: "sh", tty: true, interactive: true });
    const res = await refusedUpgrade(terminalUrl(shell.id, await ticket(viewerToken)));
    expect(res.status).toBe(403);
    await rt.api(`/v1/processes/${shell.id}/kill`, { method: "POST" });
  });
});
