/** "Notify me on this device": a Web Push subscription through the service worker at /sw.js. */
import { send } from "./api";

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

/** Subscribes this browser; resolves to what to tell the person, or throws why it cannot. */
export async function notifyThisDevice(): Promise<string> {
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) {
    throw new Error("this browser has no Web Push (on an iPhone: add the dashboard to the home screen first)");
  }
  const { publicKey } = await send<{ publicKey: string | null }>("/v1/notifications/vapid", undefined, "GET");
  if (!publicKey) throw new Error("Web Push is not set up on this deployment (VAPID keys)");
  const registration = await navigator.serviceWorker.register("/sw.js");
  if ((await Notification.requestPermission()) !== "granted") throw new Error("notifications are blocked for this site");
  const subscription =
    (await registration.pushManager.getSubscription()) ??
    (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: fromBase64url(publicKey) }));
  await send("/v1/notifications/subscriptions", {
    kind: "webpush",
    subscription: subscription.toJSON(),
    events: ["permission.requested", "turn.finished", "turn.failed"],
  });
  return "This device will be told when an agent waits for you or finishes.";
}
