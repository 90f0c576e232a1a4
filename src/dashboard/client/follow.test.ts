import { once } from "node:events";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { TranscriptEntry } from "@agent-runtime/protocol/sessions";
import { errorText } from "./api";
import { followAgain, nextWaitMs, STREAM_BACKOFF } from "./follow";
import { withEntry } from "./transcript";

const entry = (seq: number, text: string) => `id: ${seq}\nevent: entry\ndata: ${JSON.stringify({ seq, kind: "text", text, atMs: seq })}\n\n`;

describe("the reconnect policy", () => {
  it("starts over after a stream that delivered, doubles after failures up to its ceiling, and waits its own time after a quiet end", () => {
    expect(nextWaitMs(STREAM_BACKOFF, null, "failed")).toBe(1_000);
    expect(nextWaitMs(STREAM_BACKOFF, 1_000, "failed")).toBe(2_000);
    expect(nextWaitMs(STREAM_BACKOFF, 16_000, "failed")).toBe(30_000);
    expect(nextWaitMs(STREAM_BACKOFF, 30_000, "failed")).toBe(30_000);
    expect(nextWaitMs(STREAM_BACKOFF, 30_000, "said")).toBe(1_000);
    expect(nextWaitMs(STREAM_BACKOFF, 4_000, "quiet")).toBe(8_000);
    expect(nextWaitMs({ ...STREAM_BACKOFF, quietMs: 30_000 }, 1_000, "quiet")).toBe(30_000);
  });
});

describe("followAgain", () => {
  const servers: ReturnType<typeof createServer>[] = [];
  afterEach(() => {
    for (const server of servers.splice(0)) server.close();
  });

  it("resumes a dropped transcript with Last-Event-ID: an entry that grew replaces its copy and none is shown twice", async () => {
    const asked: IncomingHttpHeaders[] = [];
    const server = createServer((req, res) => {
      asked.push(req.headers);
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (asked.length === 1) {
        // Two whole entries, half of a third, then the connection drops (a phone that slept, a proxy that cut it).
        res.write(entry(1, "a") + entry(2, "b") + entry(3, "c").slice(0, 20));
        setTimeout(() => res.socket?.destroy(), 20);
      } else if (asked.length === 2) {
        // As the worker resumes (routes/sessions.ts): the entry named again (it grew since), then the rest.
        res.end(entry(2, "b and more") + entry(3, "c"));
      }
      // A third reading stays open, quiet, until the reader goes.
    });
    servers.push(server);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/sessions/s/transcript?after=0`;

    let entries: TranscriptEntry[] = [];
    const seen: number[] = [];
    const downs: (number | null)[] = [];
    const controller = new AbortController();
    const following = followAgain(
      url,
      {
        onEvent: (event, data) => {
          if (event !== "entry") return;
          const e = TranscriptEntry.parse(data);
          seen.push(e.seq);
          entries = withEntry(entries, e);
        },
        onDown: (_err, retryInMs) => downs.push(retryInMs),
      },
      { firstMs: 10, maxMs: 100 },
      controller.signal,
    );
    await expect.poll(() => asked.length).toBe(3);
    controller.abort();
    await following;

    expect(asked.map((h) => h["last-event-id"])).toEqual([undefined, "2", "3"]);
    expect(downs).toEqual([10]);
    expect(seen).toEqual([1, 2, 2, 3]);
    expect(entries.map((e) => [e.seq, e.text])).toEqual([
      [1, "a"],
      [2, "b and more"],
      [3, "c"],
    ]);
  });

  it("stops at a refusal asking again cannot change (404), and keeps trying through the service's absence (503)", async () => {
    let asked = 0;
    const answers = [503, 503, 404];
    const server = createServer((_req, res) => {
      const status = answers[asked++] ?? 500;
      res.writeHead(status, { "content-type": "application/problem+json" });
      res.end(JSON.stringify({ type: "about:blank", title: "refused", status, detail: status === 404 ? "no session s_1" : "the service is away" }));
    });
    servers.push(server);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/sessions/s_1/transcript?after=0`;
    const downs: (number | null)[] = [];
    const said: string[] = [];
    const controller = new AbortController();
    // It returns by itself after the 404: nothing aborts it.
    await followAgain(
      url,
      {
        onEvent: () => {},
        onDown: (err, retryInMs) => {
          downs.push(retryInMs);
          said.push(errorText(err));
        },
      },
      { firstMs: 10, maxMs: 100 },
      controller.signal,
    );
    expect(asked).toBe(3);
    expect(downs).toEqual([10, 20, null]);
    // In the API's words (the problem's detail), not a bare status.
    expect(said.at(-1)).toContain("no session s_1");
  });
});
