/**
 * Notifications leave a machine from its Durable Object's alarm (docs/architecture.md, "Notifications"):
 * fired here with the workers tier's helper, with the webhook's receiver answering through a spy on the
 * isolate's fetch (the object runs in this isolate). A machine that comes back after people were told it
 * went away is the event.
 */
import { SELF, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Subscription } from "@agent-runtime/protocol/notifications";
import { FakeSidecar } from "../../../test/workers/fake-sidecar";
import type { MachineObject } from "../machine/machine";

const HOOK = "https://hooks.example/runtime";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a machine's alarm", () => {
  it("sends its notifications, retries one that failed when its alarm falls due (not before), records each attempt, and then sleeps", async () => {
    const machine = "back-again";
    const stub = env.MACHINE.get(env.MACHINE.idFromName(machine)) as DurableObjectStub<MachineObject>;
    // Someone's phone subscribes, at the team, to hear when this machine is back.
    const subscribed = await SELF.fetch("https://runtime.test/v1/notifications/subscriptions", {
      method: "POST",
      headers: { authorization: `Bearer ${env.API_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ kind: "webhook", url: HOOK, secret: "whsec_0123456789abcdef", events: ["machine.online"], machines: [machine] }),
    });
    expect(subscribed.status).toBe(201);
    const subscription = (await subscribed.json()) as Subscription;
    await runInDurableObject(stub, (_, state) => state.storage.put("offline-announced", true)); // people were told it went away
    // What the receiver got: read where it arrives (a body belongs to the object that sent it).
    const received: { headers: Headers; body: unknown }[] = [];
    const answers = [503, 204];
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const request = new Request(input, init);
      if (!request.url.startsWith(HOOK)) return realFetch(input, init);
      received.push({ headers: request.headers, body: await request.json() });
      return new Response(null, { status: answers.shift() ?? 500 });
    });

    const sidecar = await FakeSidecar.connect(machine);
    // The event is queued with an alarm for now, which workerd runs by itself: the first attempt (a loaded
    // machine runs that alarm later than vi.waitFor's 1 s default).
    await vi.waitFor(() => expect(received).toHaveLength(1), { timeout: 15_000 });
    const first = received[0]!;
    expect(first.headers.get("x-agent-runtime-event")).toBe("machine.online");
    expect(first.headers.get("x-agent-runtime-signature")).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(first.body).toMatchObject({ event: "machine.online", machine });

    // The 503 is retried after its backoff (60 s in this tier): the object set its alarm for then.
    const [retrying] = await runInDurableObject(stub, (instance: MachineObject) => instance.listDeliveries(null, 10));
    expect(retrying).toMatchObject({ subscriptionId: subscription.id, attempt: 1, outcome: "retrying", httpStatus: 503 });
    const alarm = await runInDurableObject(stub, (_, state) => state.storage.getAlarm());
    expect(alarm! - retrying!.atMs).toBeGreaterThanOrEqual(59_000);
    expect(alarm! - retrying!.atMs).toBeLessThanOrEqual(61_000);
    // An alarm that runs early sends nothing before its time, and is set again for then.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(received).toHaveLength(1);
    expect(await runInDurableObject(stub, (_, state) => state.storage.getAlarm())).toBe(alarm);

    // The minute passes (the delivery falls due), and the alarm sends it again: the same delivery.
    await runInDurableObject(stub, (_, state) => state.storage.sql.exec("UPDATE deliveries SET next_at = 0"));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(received).toHaveLength(2);
    expect(received[1]!.headers.get("x-agent-runtime-delivery")).toBe(first.headers.get("x-agent-runtime-delivery"));
    const attempts = await runInDurableObject(stub, (instance: MachineObject) => instance.listDeliveries(null, 10));
    expect(attempts.map((a) => [a.attempt, a.outcome, a.httpStatus])).toEqual([
      [2, "delivered", 204],
      [1, "retrying", 503],
    ]);
    // Delivered: no alarm is left, and an idle machine's object is not woken again.
    expect(await runDurableObjectAlarm(stub)).toBe(false);
    sidecar.drop();
  });
});
