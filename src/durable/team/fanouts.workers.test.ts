/**
 * The team's fan-outs over a real Durable Object's storage: a batch at a time, and a change that starts a
 * fan-out again while a batch is being sent (the interleaving an alarm run allows while it awaits other
 * objects) is neither lost nor cut short.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TeamObject } from "./team";
import { Fanouts } from "./fanouts";

const MACHINES = ["a", "b", "c", "d", "e"];
const connectedAfter = (after: string, limit: number) => MACHINES.filter((m) => m > after).slice(0, limit);

function team(name: string): DurableObjectStub<TeamObject> {
  return env.TEAM.get(env.TEAM.idFromName(name)) as DurableObjectStub<TeamObject>;
}

describe("a fan-out", () => {
  it("reaches every connected machine a batch at a time, then is done", async () => {
    await runInDurableObject(team("fanout-plain"), async (_, state) => {
      const fanouts = new Fanouts(state.storage, connectedAfter);
      await fanouts.start("config-fanout");
      const sent: string[][] = [];
      const batch = () => {
        const these: string[] = [];
        sent.push(these);
        return fanouts.batch("config-fanout", 2, async (m) => void these.push(m));
      };
      expect(await batch()).toBe(true);
      expect(await batch()).toBe(true);
      expect(await batch()).toBe(false);
      expect(sent).toEqual([["a", "b"], ["c", "d"], ["e"]]);
      expect(await fanouts.pending("config-fanout")).toBe(false);
      expect(await batch()).toBe(false); // nothing left: no machine is sent anything again
      expect(sent.at(-1)).toEqual([]);
    });
  });

  it("started again while a batch is sent, starts from the first machine and is not deleted by the batch that was sending", async () => {
    await runInDurableObject(team("fanout-restarted"), async (_, state) => {
      const fanouts = new Fanouts(state.storage, connectedAfter);
      await fanouts.start("config-fanout");
      // The last batch of the first change: while it is sent, a second change starts its fan-out.
      expect(await fanouts.batch("config-fanout", 2, async () => {})).toBe(true);
      expect(await fanouts.batch("config-fanout", 2, async () => {})).toBe(true);
      const last = await fanouts.batch("config-fanout", 2, async (m) => {
        if (m === "e") await fanouts.start("config-fanout");
      });
      expect(last).toBe(true); // the second change still has every machine to reach
      const reached: string[] = [];
      while (await fanouts.batch("config-fanout", 2, async (m) => void reached.push(m)));
      expect(reached).toEqual(MACHINES);
      expect(await fanouts.pending("config-fanout")).toBe(false);
    });
  });

  it("started again in the middle keeps its start: the batch that was sending does not advance past it", async () => {
    await runInDurableObject(team("fanout-middle"), async (_, state) => {
      const fanouts = new Fanouts(state.storage, connectedAfter);
      await fanouts.start("subscriptions-fanout");
      await fanouts.batch("subscriptions-fanout", 2, async (m) => {
        if (m === "b") await fanouts.start("subscriptions-fanout");
      });
      const reached: string[] = [];
      while (await fanouts.batch("subscriptions-fanout", 2, async (m) => void reached.push(m)));
      expect(reached).toEqual(MACHINES); // "a" and "b" again: they had the first change only
    });
  });

  it("reads a place stored by the release before starts were stamped", async () => {
    await runInDurableObject(team("fanout-older"), async (_, state) => {
      await state.storage.put("config-fanout", { after: "b" });
      const fanouts = new Fanouts(state.storage, connectedAfter);
      const reached: string[] = [];
      while (await fanouts.batch("config-fanout", 2, async (m) => void reached.push(m)));
      expect(reached).toEqual(["c", "d", "e"]);
    });
  });
});

describe("the team's alarm", () => {
  it("re-arms itself for the six-hourly liveness refresh after a run with nothing to send", async () => {
    const stub = team("alarm-rearm");
    // Set for later (an alarm for now would run by itself, racing the one this test runs).
    await runInDurableObject(stub, (_, state) => state.storage.setAlarm(Date.now() + 60_000));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // Nothing to send: the next run is the six-hourly liveness refresh.
    const next = await runInDurableObject(stub, (_, state) => state.storage.getAlarm());
    expect(next).toBeGreaterThan(Date.now() + 5 * 60 * 60_000);
  });
});
