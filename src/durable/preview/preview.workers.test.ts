/**
 * Previews in the machine's object with a fake sidecar (test/workers/fake-sidecar.ts): what crosses the
 * tunnel for a proxied request, its flow control both ways, a sidecar that offers no previews, a dropped
 * tunnel mid-response, and grants that work once.
 */
import { SELF, env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { PREVIEW_PIECE_BYTES, PREVIEW_WINDOW_BYTES } from "@agent-runtime/protocol/preview";
import type { WorkerFrame } from "@agent-runtime/protocol/frames";
import { FakeSidecar } from "../../../test/workers/fake-sidecar";

const sidecars: FakeSidecar[] = [];
afterEach(() => {
  for (const sidecar of sidecars.splice(0)) if (!sidecar.closed) sidecar.drop();
});

async function connect(machine: string, offersPreview = true): Promise<FakeSidecar> {
  const sidecar = await FakeSidecar.connect(machine, undefined, offersPreview ? { preview: { expose: "3000" } } : {});
  sidecars.push(sidecar);
  return sidecar;
}

const holder = { tokenId: null, name: "API_TOKEN", expiresAtMs: null };

async function pathTo(machine: string, port: number): Promise<string> {
  const { secret } = await env.MACHINE.get(env.MACHINE.idFromName(machine)).mintPreview(port, holder, "pass");
  return `https://runtime.test/machines/${machine}/ports/${port}/~${secret}`;
}

type Open = Extract<WorkerFrame, { t: "po" }>;
const isOpen = (f: WorkerFrame): f is Open => f.t === "po";

describe("previews in the machine object", () => {
  it("refuses clearly when the machine's sidecar offers no previews", async () => {
    await connect("old-sidecar", false);
    const res = await SELF.fetch(`${await pathTo("old-sidecar", 3000)}/`);
    expect(res.status).toBe(501);
    const problem = (await res.json()) as { type: string; detail: string };
    expect(problem.type).toBe("urn:agent-runtime:error:sidecar_outdated");
    expect(problem.detail).toContain("upgrade the sidecar");
  });

  it("sends the response within the window and credits it back as the browser reads", async () => {
    const sidecar = await connect("flow");
    const pending = SELF.fetch(`${await pathTo("flow", 3000)}/big?x=1`);
    const open = (await sidecar.next(isOpen)) as Open;
    expect(open).toMatchObject({ port: 3000, method: "GET", path: "/big?x=1", body: false });
    expect(open.headers.some(([name]) => name === "x-stream-holder")).toBe(false);
    sidecar.send({ t: "ph", sid: open.sid, status: 200, headers: [["content-type", "application/octet-stream"]] });
    const piece = new Uint8Array(PREVIEW_PIECE_BYTES).fill(7);
    for (let sent = 0; sent < PREVIEW_WINDOW_BYTES; sent += piece.length) sidecar.send({ t: "pd", sid: open.sid, bytes: piece });
    const credit = sidecar.next((f) => f.t === "pw" && f.sid === open.sid);
    const res = await pending;
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let read = 0;
    while (read < PREVIEW_WINDOW_BYTES) read += ((await reader.read()).value ?? new Uint8Array()).length;
    const given = (await credit) as Extract<WorkerFrame, { t: "pw" }>;
    expect(given.n).toBeGreaterThanOrEqual(PREVIEW_WINDOW_BYTES / 4);
    expect(given.n).toBeLessThanOrEqual(PREVIEW_WINDOW_BYTES);
    sidecar.send({ t: "pd", sid: open.sid, fin: true, bytes: new Uint8Array(0) });
    expect((await reader.read()).done).toBe(true);
  });

  it("sends a request body only as the sidecar's credit allows, in pieces", async () => {
    const sidecar = await connect("upload");
    const body = new Uint8Array(PREVIEW_PIECE_BYTES * 3 + 5).fill(1);
    const pending = SELF.fetch(`${await pathTo("upload", 3000)}/up`, { method: "POST", body });
    const open = (await sidecar.next(isOpen)) as Open;
    expect(open.body).toBe(true);
    const pieces: number[] = [];
    let fin = false;
    // One byte of credit lets one piece through; then the worker waits for more.
    const first = sidecar.next((f) => f.t === "pd" && f.sid === open.sid);
    sidecar.send({ t: "pw", sid: open.sid, n: 1 });
    const piece = (await first) as Extract<WorkerFrame, { t: "pd" }>;
    pieces.push(piece.bytes.length);
    const last = sidecar.next((f) => f.t === "pd" && f.sid === open.sid && f.fin === true);
    sidecar.send({ t: "pw", sid: open.sid, n: PREVIEW_WINDOW_BYTES });
    await last;
    for (const frame of sidecar.received)
      if (frame.t === "pd" && frame.sid === open.sid && frame !== piece) {
        if (frame.fin) fin = true;
        else pieces.push(frame.bytes.length);
      }
    expect(fin).toBe(true);
    expect(Math.max(...pieces)).toBeLessThanOrEqual(PREVIEW_PIECE_BYTES);
    expect(pieces.reduce((a, b) => a + b, 0)).toBe(body.length);
    sidecar.send({ t: "ph", sid: open.sid, status: 204, headers: [] });
    expect((await pending).status).toBe(204);
  });

  it("answers the sidecar's problem before the head, and cuts a response short when the tunnel drops", async () => {
    const sidecar = await connect("drops");
    const base = await pathTo("drops", 3000);
    const refused = SELF.fetch(`${base}/`);
    const first = (await sidecar.next(isOpen)) as Open;
    sidecar.send({ t: "px", sid: first.sid, problem: { code: "port_unreachable", detail: "nothing is listening on port 3000 of this machine" } });
    expect((await refused).status).toBe(502);
    const pending = SELF.fetch(`${base}/slow`);
    const open = (await sidecar.next(isOpen)) as Open;
    sidecar.send({ t: "ph", sid: open.sid, status: 200, headers: [] });
    sidecar.send({ t: "pd", sid: open.sid, bytes: new Uint8Array([1, 2, 3]) });
    const reader = ((await pending).body as ReadableStream<Uint8Array>).getReader();
    expect((await reader.read()).value).toEqual(new Uint8Array([1, 2, 3]));
    sidecar.drop();
    await expect(reader.read()).rejects.toThrow();
  });

  it("trades a grant for a pass once", async () => {
    const stub = env.MACHINE.get(env.MACHINE.idFromName("grants"));
    const { secret } = await stub.mintPreview(5173, holder, "grant");
    const pass = await stub.redeemPreviewGrant(secret);
    expect(pass).toMatchObject({ port: 5173, secret: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(await stub.redeemPreviewGrant(secret)).toBeNull();
    expect(await stub.redeemPreviewGrant("0".repeat(32))).toBeNull();
  });
});
