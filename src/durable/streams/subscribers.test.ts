import { describe, expect, it } from "vitest";
import type { StreamEvent } from "@agent-runtime/protocol/frames";
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import { RecorderSubscriptions } from "../sessions/recorder-subscriptions";
import { type Subscriber, SubscriberMap, Subscribers } from "./subscribers";

/** A subscriber that writes down what it was handed. */
function listener(sub: string, log: string[]): Subscriber {
  return {
    sub,
    subscribeFrame: () => ({ t: "sub", sub, stream: { kind: "logs", processId: "p" }, after: 0 }),
    deliver: (events) => log.push(`${sub} ev ${events.map(([seq]) => seq).join(",")}`),
    end: (end) => log.push(`${sub} end ${end.code}`),
    fail: (problem: ProblemInit) => log.push(`${sub} fail ${problem.code}`),
  };
}

describe("Subscribers", () => {
  it("hands each frame to the subscriber of its sub, whichever kind holds it, and drops one nobody holds", () => {
    const log: string[] = [];
    const readers = new SubscriberMap<Subscriber>();
    readers.add(listener("r1", log));
    const viewers = new SubscriberMap<Subscriber>();
    viewers.add(listener("v1", log));
    const subscribers = new Subscribers([readers, viewers]);
    subscribers.deliver("v1", [[3, "{}"]], undefined);
    subscribers.deliver(
      "r1",
      [
        [1, "{}"],
        [2, "{}"],
      ],
      undefined,
    );
    subscribers.deliver("gone", [[1, "{}"]], undefined);
    subscribers.end("r1", { code: "exited", json: "{}" });
    expect(log).toEqual(["v1 ev 3", "r1 ev 1,2", "r1 end exited"]);
  });

  it("fails all of them from a snapshot, so one that leaves its kind while failing does not stop the rest", () => {
    const log: string[] = [];
    const readers = new SubscriberMap<Subscriber>();
    for (const sub of ["a", "b", "c"]) {
      const inner = listener(sub, log);
      const fail = (problem: ProblemInit) => {
        readers.delete(sub);
        inner.fail(problem);
      };
      readers.add({ ...inner, fail });
    }
    const subscribers = new Subscribers([readers]);
    subscribers.fail({ code: "machine_restarted", detail: "gone" });
    expect(log).toEqual(["a fail machine_restarted", "b fail machine_restarted", "c fail machine_restarted"]);
    expect(subscribers.subscribeFrames()).toEqual([]);
  });
});

describe("RecorderSubscriptions", () => {
  function recorder() {
    const heard: string[] = [];
    const recorded = new Map<string, number>([["s1", 41]]);
    const subscriptions = new RecorderSubscriptions({
      events: (serverId, events: StreamEvent[]) => heard.push(`${serverId} ${events.length}`),
      ended: (serverId, endJson) => heard.push(`${serverId} ended ${endJson}`),
      after: (serverId) => recorded.get(serverId) ?? 0,
    });
    return { heard, subscriptions };
  }

  it("follows a server once, from what it recorded, and stops following it when its stream ends", () => {
    const { heard, subscriptions } = recorder();
    expect(subscriptions.follow("s1")).toEqual({
      t: "sub",
      sub: "rec:s1",
      stream: { kind: "acp", serverId: "s1" },
      after: 41,
      recorder: true,
      packed: true,
      shared: true,
    });
    expect(subscriptions.follow("s1")).toBeNull();
    expect(subscriptions.find("s1")).toBeNull(); // a sub of another kind
    subscriptions.find("rec:s1")?.deliver([[42, "{}"]], undefined);
    subscriptions.find("rec:s1")?.end({ code: "exited", json: '{"exitCode":0}' });
    expect(heard).toEqual(["s1 1", 's1 ended {"exitCode":0}']);
    expect(subscriptions.all()).toEqual([]);
  });

  it("follows again a server whose events arrive after the object slept and forgot it", () => {
    const { subscriptions } = recorder();
    subscriptions.find("rec:s2")?.deliver([[1, "{}"]], undefined);
    expect(subscriptions.all().map((s) => s.subscribeFrame())).toEqual([
      { t: "sub", sub: "rec:s2", stream: { kind: "acp", serverId: "s2" }, after: 0, recorder: true, packed: true, shared: true },
    ]);
  });

  it("keeps following through a failed source: the records outlive it", () => {
    const { subscriptions } = recorder();
    subscriptions.follow("s1");
    new Subscribers([subscriptions]).fail({ code: "machine_restarted", detail: "gone" });
    expect(subscriptions.all().map((s) => s.sub)).toEqual(["rec:s1"]);
  });
});
