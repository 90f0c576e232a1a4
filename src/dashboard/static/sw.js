// The dashboard's service worker: it shows the notifications this deployment pushes (docs/architecture.md,
// "Notifications") and opens the session a tap is about. It holds no token and reads no API.
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => {
  let message = {};
  try {
    message = event.data ? event.data.json() : {};
  } catch {
    message = { title: "agent-runtime", body: event.data ? event.data.text() : "" };
  }
  event.waitUntil(
    self.registration.showNotification(message.title || "agent-runtime", {
      body: message.body || "",
      tag: message.tag || undefined,
      data: { url: message.url || "/" },
      // A question waits for a person: it stays until it is seen.
      requireInteraction: message.event === "permission.requested",
      icon: "/icon.svg",
    }),
  );
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = new URL(event.notification.data?.url || "/", self.location.origin);
  if (url.origin !== self.location.origin) return; // only ever this dashboard
  event.waitUntil(
    (async () => {
      const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
      for (const client of windows) {
        if (new URL(client.url).origin === url.origin && "focus" in client) {
          await client.focus();
          return client.navigate(url.href);
        }
      }
      return self.clients.openWindow(url.href);
    })(),
  );
});
