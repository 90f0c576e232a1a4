/** "Notify me on this device": a Web Push subscription through the service worker at /sw.js. */
import { byId, must, typed } from "./api";

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

/** How long the browser's push service may take to answer before the person is told it did not. */
export const PUSH_SERVICE_WAIT_MS = 15_000;

/** `work`, or a plain sentence when it takes longer than `ms` (a push service that never answers). */
function within<T>(work: Promise<T>, ms: number, why: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(why)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** Subscribes this browser; resolves to what to tell the person, or throws why it cannot. */
export async function notifyThisDevice(): Promise<string> {
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) {
    throw new Error("this browser has no Web Push (on an iPhone: add the dashboard to the home screen first)");
  }
  const { publicKey } = await must(typed.GET("/v1/notifications/vapid"));
  if (!publicKey) throw new Error("Web Push is not set up on this deployment (VAPID keys)");
  const registration = await navigator.serviceWorker.register("/sw.js");
  if ((await Notification.requestPermission()) !== "granted") throw new Error("notifications are blocked for this site (or this is a private window)");
  const subscribing = (async () =>
    (await registration.pushManager.getSubscription()) ??
    (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: fromBase64url(publicKey) })))();
  const subscription = await within(
    subscribing.catch((err: unknown) => {
      // The browser's own words ("Registration failed - push service error") say nothing to a person.
      throw new Error(
        `this browser could not subscribe to its push service (${err instanceof Error ? err.name : "error"}): try again later, or outside a private window`,
      );
    }),
    PUSH_SERVICE_WAIT_MS,
    `this browser's push service did not answer within ${PUSH_SERVICE_WAIT_MS / 1000} s: try again later`,
  );
  const events = ["permission.requested", "elicitation.requested", "agent.login", "turn.finished", "turn.failed"] as const;
  const { endpoint, keys, expirationTime } = subscription.toJSON();
  if (!endpoint || !keys?.auth || !keys.p256dh) throw new Error("this browser's push subscription has no endpoint or keys: try again later");
  const body = { kind: "webpush" as const, subscription: { endpoint, expirationTime, keys: { auth: keys.auth, p256dh: keys.p256dh } }, events: [...events] };
  const made = await must(typed.POST("/v1/notifications/subscriptions", { body }));
  // A test at once: the person sees now that a notification reaches this device, not at the first real one.
  const tested = await must(typed.POST("/v1/notifications/subscriptions/{id}/test", byId(made.id))).then(
    () => "a test notification is on its way",
    (err: unknown) => `but the test notification could not be sent (${err instanceof Error ? err.message : String(err)})`,
  );
  return `This device will be told when an agent waits for you or finishes: ${tested}.`;
}
