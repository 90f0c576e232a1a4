import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { listeningSet, PortWatch, watchPorts } from "./port-watch";

describe("watchPorts", () => {
  it("says when a socket starts listening and when it stops", async () => {
    // Other processes on the machine may listen meanwhile: each wait is for a change that shows this port's.
    let waiting: { holds: (set: string) => boolean; done: () => void } | null = null;
    let baseline: () => void = () => {};
    const firstRead = new Promise<void>((resolve) => (baseline = resolve));
    const stop = watchPorts(
      () => {
        const w = waiting;
        if (w) void listeningSet().then((set) => w.holds(set) && w.done());
      },
      50,
      () => baseline(),
    );
    const change = (holds: (set: string) => boolean) => new Promise<void>((done) => (waiting = { holds, done }));
    try {
      const server = createServer();
      // The watch's first read is its baseline: a server listening after it is a change.
      await firstRead;
      let port = 0;
      const listened = change((set) => set.split("\n").includes(`127.0.0.1:${port}`));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      port = (server.address() as { port: number }).port;
      await listened;
      const closed = change((set) => !set.split("\n").includes(`127.0.0.1:${port}`));
      server.close();
      await closed;
      expect((await listeningSet()).split("\n")).not.toContain(`127.0.0.1:${port}`);
    } finally {
      stop();
    }
  });

  it("counts a change from what a list read showed, even a state its own reads never saw", async () => {
    // The watch's own reads are an hour apart here: only the list read (`shown`) sees the server listen.
    const watch = new PortWatch();
    let changes = 0;
    let baseline: () => void = () => {};
    const firstRead = new Promise<void>((resolve) => (baseline = resolve));
    const stop = watch.watch(
      () => changes++,
      3_600_000,
      () => baseline(),
    );
    try {
      await firstRead;
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const port = (server.address() as { port: number }).port;
      const shown = await listeningSet();
      expect(shown.split("\n")).toContain(`127.0.0.1:${port}`);
      watch.shown(shown);
      expect(changes).toBe(1); // a page was shown a port the watch had not seen: the others are told too
      const before = changes;
      await new Promise((resolve) => server.close(resolve));
      await watch.check();
      // Its going is a change, though the watch's own last read never had it.
      expect(changes).toBeGreaterThan(before);
    } finally {
      stop();
    }
  });
});
