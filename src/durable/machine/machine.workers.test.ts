/**
 * The machine's Durable Object inside workerd, reached through the worker's own routes, with a fake
 * sidecar speaking frames (./fake-sidecar.ts): what crosses the tunnel, what a dropped or restarted
 * sidecar does to a call in flight, and what an answer of the wrong shape becomes. No sidecar process,
 * no agent: the real-runtime suite (test/) covers those.
 */
import { SELF, env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { LIMITS } from "@agent-runtime/protocol/limits";
import type { Process } from "@agent-runtime/protocol/processes";
import { FakeSidecar } from "../../../test/workers/fake-sidecar";

const sidecars: FakeSidecar[] = [];

async function connect(machine: string, bootId?: string, offers?: { uploadWindow?: number }): Promise<FakeSidecar> {
  const sidecar = await FakeSidecar.connect(machine, bootId, offers);
  sidecars.push(sidecar);
  return sidecar;
}

afterEach(() => {
  for (const sidecar of sidecars.splice(0)) if (!sidecar.closed) sidecar.drop();
});

function api(machine: string, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${env.API_TOKEN}`);
  return SELF.fetch(`https://runtime.test/machines/${machine}/v1${path}`, { ...init, headers });
}

describe("the machine object with a fake sidecar", () => {
  it("sends a call as a parsed frame and answers the client with the sidecar's answer", async () => {
    const sidecar = await connect("laptop");
    const response = api("laptop", "/acp");
    const call = await sidecar.call("acp.list");
    expect(call.args).toEqual({});
    sidecar.answer(call, { servers: [{ serverId: "s1", agent: "mock", createdAtMs: 1, processId: "p1" }] });
    const res = await response;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ servers: [{ serverId: "s1", agent: "mock", createdAtMs: 1, processId: "p1" }] });
  });

  it("answers a problem the sidecar sent with its own status", async () => {
    const sidecar = await connect("laptop");
    const response = api("laptop", "/acp/s1", { method: "DELETE" });
    const call = await sidecar.call("acp.delete");
    expect(call.args).toEqual({ serverId: "s1" });
    sidecar.fail(call, { code: "not_found", detail: "no server 's1'" });
    const res = await response;
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(await res.json()).toMatchObject({ type: "urn:agent-runtime:error:not_found", detail: "no server 's1'" });
  });

  it("refuses an answer its operation's schema does not allow, and says which side to update", async () => {
    const sidecar = await connect("laptop");
    const response = api("laptop", "/acp");
    sidecar.answerUnchecked(await sidecar.call("acp.list"), { servers: "none" });
    const res = await response;
    expect(res.status).toBe(502);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/acp\.list.*update the sidecar/);
  });

  it("sends a call in flight again to the same sidecar coming back, which answers it once", async () => {
    const first = await connect("laptop", "boot-1");
    const response = api("laptop", "/acp");
    const sent = await first.call("acp.list");
    first.drop();
    const again = await connect("laptop", "boot-1");
    // The worker re-sends the very frame it sent before (same id): the sidecar knows it ran it already.
    const resent = await again.call("acp.list");
    expect(resent.id).toBe(sent.id);
    again.answer(resent, { servers: [] });
    expect((await response).status).toBe(200);
  });

  it("never runs a call in flight again on a sidecar that restarted: the client is told, with 503", async () => {
    const first = await connect("laptop", "boot-1");
    const response = api("laptop", "/acp");
    await first.call("acp.list");
    first.drop();
    const restarted = await connect("laptop", "boot-2");
    const res = await response;
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ type: "urn:agent-runtime:error:machine_restarted" });
    expect(restarted.received.filter((f) => f.t === "req" && f.op === "acp.list")).toEqual([]);
  });

  it("answers 404 for a machine no sidecar ever connected as, and 503 once its sidecar is gone past the grace", async () => {
    expect((await api("never-seen", "/acp")).status).toBe(404);
    const sidecar = await connect("gone");
    sidecar.drop();
    // RECONNECT_GRACE_MS is 2 s in this tier: a call within it waits for the sidecar, after it is refused.
    const res = await api("gone", "/acp");
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ type: "urn:agent-runtime:error:machine_offline" });
  });

  it("parses an ACP message once: the sidecar gets its method, cwd and id as fields, and the session is recorded", async () => {
    const sidecar = await connect("laptop");
    const post = (body: unknown, query = "") =>
      api("laptop", `/acp/s1${query}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(body),
      });
    const initializing = post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }, "?agent=mock");
    const init = await sidecar.call("acp.post");
    expect(init.args).toMatchObject({ serverId: "s1", agent: "mock", method: "initialize", awaitId: 1 });
    sidecar.answer(init, {
      status: 200,
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, result: { protocolVersion: 1, agentCapabilities: { loadSession: true } } }),
    });
    expect((await initializing).status).toBe(200);
    const starting = post({ jsonrpc: "2.0", id: "two", method: "session/new", params: { cwd: "/home/me/project", mcpServers: [] } });
    const start = await sidecar.call("acp.post");
    expect(start.args).toMatchObject({ method: "session/new", cwd: "/home/me/project", awaitId: "two" });
    expect(JSON.parse(start.args.message)).toEqual({ jsonrpc: "2.0", id: "two", method: "session/new", params: { cwd: "/home/me/project", mcpServers: [] } });
    sidecar.answer(start, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: "two", result: { sessionId: "acp-1" } }) });
    expect(await (await starting).json()).toEqual({ jsonrpc: "2.0", id: "two", result: { sessionId: "acp-1" } });
    const listed = (await (await api("laptop", "/sessions")).json()) as { sessions: { cwd: string; agent: string; state: string }[] };
    expect(listed.sessions).toEqual([expect.objectContaining({ cwd: "/home/me/project", agent: "mock", state: "idle" })]);
  });

  it("refuses a JSON-RPC message with both a result and an error before anything reaches the machine", async () => {
    const sidecar = await connect("laptop");
    const res = await api("laptop", "/acp/s1", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, result: {}, error: { code: -1, message: "both" } }),
    });
    expect(res.status).toBe(400);
    expect(sidecar.received.filter((f) => f.t === "req")).toEqual([]);
  });

  it("writes a file of one piece in one call: the bytes travel with the commit, as one binary frame", async () => {
    const sidecar = await connect("laptop");
    // With a Content-Length (read whole by the worker), and streamed without one (read by the object).
    const streamed = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("hel"));
        controller.enqueue(new TextEncoder().encode("lo"));
        controller.close();
      },
    });
    for (const body of ["hello", streamed]) {
      const writing = api("laptop", "/fs/file?path=/tmp/a.txt", { method: "PUT", body });
      const commit = await sidecar.call("fs.commit");
      expect(commit.args).toMatchObject({ path: "/tmp/a.txt", offset: 0 });
      expect(new TextDecoder().decode(commit.args.bytes)).toBe("hello");
      sidecar.answer(commit, { path: "/tmp/a.txt", bytesWritten: 5 });
      expect(await (await writing).json()).toEqual({ path: "/tmp/a.txt", bytesWritten: 5 });
    }
    expect(sidecar.received.filter((f) => f.t === "req" && f.op === "fs.upload")).toEqual([]);
  });

  it("refuses a one-piece body longer or shorter than its Content-Length (400), sending the machine nothing", async () => {
    const sidecar = await connect("laptop");
    for (const [declared, body] of [
      [10, "x".repeat(100)],
      [100, "x".repeat(10)],
    ] as const) {
      const res = await api("laptop", "/fs/file?path=/tmp/a.txt", { method: "PUT", headers: { "content-length": String(declared) }, body });
      expect(res.status, `${body.length} bytes said to be ${declared}`).toBe(400);
      expect(((await res.json()) as { detail: string }).detail).toMatch(declared < body.length ? /longer than its 10 bytes/ : /ended/);
    }
    expect(sidecar.received.filter((f) => f.t === "req")).toEqual([]);
  });

  it("stages a larger file piece by piece, in order, one at a time for a sidecar that offers no more, and sends its last piece with the commit", async () => {
    const sidecar = await connect("laptop");
    const size = 2 * LIMITS.fileChunkBytes + 3;
    const writing = api("laptop", "/fs/file?path=/tmp/big.bin", { method: "PUT", body: new Uint8Array(size).fill(1) });
    const piece = await sidecar.call("fs.upload");
    expect(piece.args).toMatchObject({ offset: 0 });
    expect(piece.args.bytes.length).toBe(LIMITS.fileChunkBytes);
    // The next piece was read while the first was stored; it goes out once the first is.
    const next = sidecar.call("fs.upload");
    sidecar.answer(piece, { received: LIMITS.fileChunkBytes });
    const second = await next;
    expect(second.args).toMatchObject({ upload: piece.args.upload, offset: LIMITS.fileChunkBytes });
    expect(second.args.bytes.length).toBe(LIMITS.fileChunkBytes);
    sidecar.answer(second, { received: 2 * LIMITS.fileChunkBytes });
    const commit = await sidecar.call("fs.commit");
    expect(commit.args).toMatchObject({ upload: piece.args.upload, offset: 2 * LIMITS.fileChunkBytes, path: "/tmp/big.bin" });
    expect(commit.args.bytes.length).toBe(3);
    sidecar.answer(commit, { path: "/tmp/big.bin", bytesWritten: size });
    expect((await writing).status).toBe(200);
  });

  it("sends a sidecar that offers an upload window of two the next piece before the last is stored", async () => {
    const sidecar = await connect("laptop", undefined, { uploadWindow: 2 });
    const size = 3 * LIMITS.fileChunkBytes + 3;
    const writing = api("laptop", "/fs/file?path=/tmp/big.bin", { method: "PUT", body: new Uint8Array(size).fill(1) });
    // Two pieces arrive with neither answered (the sidecar stores them in order).
    const [first, second] = await Promise.all([sidecar.call("fs.upload"), sidecar.call("fs.upload")]);
    expect([first.args.offset, second.args.offset]).toEqual([0, LIMITS.fileChunkBytes]);
    expect(second.args.upload).toBe(first.args.upload);
    expect([first.args.bytes.length, second.args.bytes.length]).toEqual([LIMITS.fileChunkBytes, LIMITS.fileChunkBytes]);
    // The third waits for a place: it follows once the first is stored.
    const next = sidecar.call("fs.upload");
    sidecar.answer(first, { received: LIMITS.fileChunkBytes });
    const third = await next;
    expect(third.args).toMatchObject({ upload: first.args.upload, offset: 2 * LIMITS.fileChunkBytes });
    const committing = sidecar.call("fs.commit");
    sidecar.answer(second, { received: 2 * LIMITS.fileChunkBytes });
    sidecar.answer(third, { received: 3 * LIMITS.fileChunkBytes });
    const commit = await committing;
    expect(commit.args).toMatchObject({ upload: first.args.upload, offset: 3 * LIMITS.fileChunkBytes, path: "/tmp/big.bin" });
    expect(commit.args.bytes.length).toBe(3);
    sidecar.answer(commit, { path: "/tmp/big.bin", bytesWritten: size });
    expect((await writing).status).toBe(200);
  });

  describe("one subscriber model: readers, viewers and the recorder follow streams the same way", () => {
    /** Reads an SSE body until its text so far includes `text`. */
    async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, seen: { text: string }, text: string): Promise<void> {
      const decoder = new TextDecoder();
      while (!seen.text.includes(text)) {
        const { done, value } = await reader.read();
        if (done) throw new Error(`the stream ended before '${text}' in: ${seen.text}`);
        seen.text += decoder.decode(value, { stream: true });
      }
    }

    const entry = (sequence: number, data: string) => JSON.stringify({ sequence, timestampMs: 1, stream: "pty", encoding: "utf8", data });
    const running: Process = {
      id: "p1",
      command: "bash",
      args: [],
      createdAtMs: 1,
      interactive: true,
      tty: true,
      owner: "user",
      status: "running",
      cwd: "/",
      pid: 7,
    };

    it("re-subscribes each subscriber after what it received when the same sidecar comes back", async () => {
      const first = await connect("desk", "boot-1");
      // An SSE reader of a process's output.
      const opening = api("desk", "/processes/p1/logs?follow=true", { headers: { accept: "text/event-stream" } });
      const readerSub = await first.subscription();
      expect(readerSub).toMatchObject({ stream: { kind: "logs", processId: "p1" }, after: 0, packed: true });
      first.events(readerSub.sub, [[1, entry(1, "one")]]);
      const sse = (await opening).body!.getReader();
      const seen = { text: "" };
      await readUntil(sse, seen, "id: 1\n");
      // A terminal viewer of the same process.
      const attaching = api("desk", "/processes/p1/terminal/ws", { headers: { upgrade: "websocket" } });
      first.answer(await first.call("processes.get"), running);
      const viewerSub = await first.subscription();
      const socket = (await attaching).webSocket!;
      socket.binaryType = "arraybuffer";
      const messages: (string | ArrayBuffer)[] = [];
      let arrived = () => {};
      socket.addEventListener("message", (event) => {
        messages.push(event.data as string | ArrayBuffer);
        arrived();
      });
      const received = (count: number) =>
        new Promise<void>((resolve) => {
          arrived = () => messages.length >= count && resolve();
          arrived();
        });
      socket.accept();
      expect(viewerSub).toMatchObject({ stream: { kind: "logs", processId: "p1" }, after: 0, output: "bytes" });
      // A sidecar that does not send bytes sends log entries: a viewer reads those too.
      const two = received(2);
      first.events(viewerSub.sub, [[1, entry(1, "one")]]);
      await two;
      expect(JSON.parse(messages[0] as string)).toEqual({ type: "ready", processId: "p1" });
      expect(new TextDecoder().decode(messages[1] as ArrayBuffer)).toBe("one");

      first.drop();
      const again = await connect("desk", "boot-1");
      const resubscribed = [await again.subscription(), await again.subscription()];
      expect(resubscribed).toEqual(
        expect.arrayContaining([
          { t: "sub", sub: readerSub.sub, stream: { kind: "logs", processId: "p1" }, after: 1, packed: true, shared: true },
          { t: "sub", sub: viewerSub.sub, stream: { kind: "logs", processId: "p1" }, after: 1, output: "bytes", shared: true },
        ]),
      );
      // Both go on from there: an overlapping replay is not delivered twice. The reader's batch comes packed
      // (the events' JSON texts as the binary frame's payload), as it asked; before, a sidecar sent JSON.
      const three = received(3);
      again.events(
        readerSub.sub,
        [
          [1, entry(1, "one")],
          [2, entry(2, "twö")],
        ],
        "packed",
      );
      // The viewer's output as the bytes written (one binary frame), the overlap skipped.
      again.output(viewerSub.sub, [
        [1, "one"],
        [2, "two"],
      ]);
      await readUntil(sse, seen, `data: ${entry(2, "twö")}\n`);
      expect(seen.text.match(/id: 1\n/g)).toHaveLength(1);
      await three;
      expect(messages.slice(2).map((m) => new TextDecoder().decode(m as ArrayBuffer))).toEqual(["two"]);
      socket.close();
      await sse.cancel();
    });

    it("hands a batch addressed to several subscriptions to each of them, read once", async () => {
      const sidecar = await connect("studio");
      const readers = [];
      const subs: string[] = [];
      for (let i = 0; i < 2; i++) {
        const opening = api("studio", "/processes/p1/logs?follow=true", { headers: { accept: "text/event-stream" } });
        const sub = await sidecar.subscription();
        expect(sub).toMatchObject({ shared: true });
        sidecar.events(sub.sub, []); // accepted
        readers.push((await opening).body!.getReader());
        subs.push(sub.sub);
      }
      for (const how of ["packed", "json"] as const) {
        const seq = how === "packed" ? 1 : 2;
        sidecar.events([subs[0]!, subs[1]!], [[seq, entry(seq, how)]], how);
        for (const reader of readers) await readUntil(reader, { text: "" }, `id: ${seq}\nevent: log\ndata: ${entry(seq, how)}\n`);
      }
      for (const reader of readers) await reader.cancel();
    });

    it("fails the readers of a restarted sidecar's streams, and follows the recorder's servers again", async () => {
      const first = await connect("tower", "boot-1");
      // A client's ACP server: the recorder follows its stream.
      const posting = api("tower", "/acp/s1?agent=mock", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }),
      });
      const post = await first.call("acp.post");
      const recorderSub = first.subscription((f) => f.recorder === true);
      first.answer(post, { status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 1, result: { protocolVersion: 1, agentCapabilities: {} } }) });
      expect((await posting).status).toBe(200);
      expect(await recorderSub).toMatchObject({ sub: "rec:s1", stream: { kind: "acp", serverId: "s1" }, after: 0 });

      const opening = api("tower", "/processes/p1/logs?follow=true", { headers: { accept: "text/event-stream" } });
      const readerSub = await first.subscription((f) => f.stream.kind === "logs");
      first.events(readerSub.sub, [[1, entry(1, "one")]]);
      const sse = (await opening).body!.getReader();
      const seen = { text: "" };
      await readUntil(sse, seen, "id: 1\n");

      first.drop();
      const restarted = await connect("tower", "boot-2");
      const again = await restarted.subscription();
      // The reader is told its source is gone; the recorder asks the new process for its server (which answers `end`).
      await readUntil(sse, seen, "machine_restarted");
      expect(again).toMatchObject({ sub: "rec:s1", recorder: true });
      expect(restarted.received.filter((f) => f.t === "sub" && f.sub === readerSub.sub)).toEqual([]);
      restarted.send({ t: "end", sub: "rec:s1", end: { code: "not_found", json: "{}" } });
      const { done } = await sse.read();
      expect(done).toBe(true);
    });
  });
});
