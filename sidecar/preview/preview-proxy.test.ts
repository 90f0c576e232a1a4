import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { SidecarFrame } from "@agent-runtime/protocol/frames";
import { PREVIEW_PIECE_BYTES, PREVIEW_WINDOW_BYTES, type PreviewOpen } from "@agent-runtime/protocol/preview";
import { ExposedPorts } from "./exposed-ports";
import { PreviewProxy } from "./preview-proxy";

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(handler: http.RequestListener): Promise<number> {
  const server = http.createServer(handler);
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return (server.address() as AddressInfo).port;
}

/** A proxy whose frames to the worker are kept, and a way to wait for one. */
function proxyFor(expose: string, options = {}) {
  const frames: SidecarFrame[] = [];
  const proxy = new PreviewProxy(ExposedPorts.parse(expose), (frame) => frames.push(frame), options);
  const until = async (match: (frames: SidecarFrame[]) => boolean) => {
    await expect.poll(() => match(frames), { timeout: 5_000 }).toBe(true);
  };
  return { proxy, frames, until };
}

const open = (port: number, extra: Partial<PreviewOpen> = {}): PreviewOpen => ({
  t: "po",
  sid: "s1",
  port,
  method: "GET",
  path: "/",
  headers: [],
  body: false,
  ...extra,
});

describe("the sidecar's preview proxy", () => {
  it("stops sending a response at the end of the worker's credit, and goes on when more comes", async () => {
    const piece = Buffer.alloc(64 * 1024, 1);
    const port = await serve((_req, res) => {
      const write = () => {
        while (res.write(piece));
        res.once("drain", write);
      };
      write();
    });
    const { proxy, frames, until } = proxyFor(String(port));
    proxy.frame(open(port));
    const sent = () => frames.reduce((sum, f) => sum + (f.t === "pd" || f.t === "ph" ? (f.bytes?.length ?? 0) : 0), 0);
    await until(() => sent() >= PREVIEW_WINDOW_BYTES);
    // The app keeps writing, but nothing more leaves until the worker's reader takes some.
    const atWindow = sent();
    expect(atWindow).toBeLessThan(PREVIEW_WINDOW_BYTES + 2 * PREVIEW_PIECE_BYTES);
    expect(frames.every((f) => f.t !== "pd" || f.bytes.length <= PREVIEW_PIECE_BYTES)).toBe(true);
    proxy.frame({ t: "pw", sid: "s1", n: PREVIEW_WINDOW_BYTES });
    await until(() => sent() >= atWindow + PREVIEW_WINDOW_BYTES);
    proxy.frame({ t: "px", sid: "s1" });
    expect(proxy.size).toBe(0);
  });

  it("refuses a port its owner did not expose before connecting, and says when nothing listens", async () => {
    const { proxy, frames } = proxyFor("1");
    proxy.frame(open(2));
    expect(frames).toEqual([{ t: "px", sid: "s1", problem: { code: "port_not_allowed", detail: expect.stringContaining("--expose-ports 2") } }]);
    const closed = await serve(() => {});
    const server = servers.pop();
    await new Promise((resolve) => server?.close(resolve));
    const second = proxyFor(String(closed));
    second.proxy.frame(open(closed));
    await second.until((f) => f.some((x) => x.t === "px"));
    expect(second.frames[0]).toMatchObject({
      t: "px",
      problem: { code: "port_unreachable", detail: `nothing is listening on port ${closed} of this machine` },
    });
  });

  it("ends a stream idle past its limit", async () => {
    const port = await serve((_req, res) => {
      res.writeHead(200);
      res.write("first and then nothing");
    });
    const { proxy, frames, until } = proxyFor(String(port), { httpIdleMs: 200 });
    proxy.frame(open(port));
    await until((f) => f.some((x) => x.t === "px"));
    expect(frames.at(-1)).toMatchObject({ t: "px", problem: { code: "timeout", detail: expect.stringContaining("no bytes either way") } });
    expect(proxy.size).toBe(0);
  });
});
