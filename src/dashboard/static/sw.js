// The dashboard's service worker: it shows the notifications this deployment pushes (docs/architecture.md,
// "Notifications"), opens the session a tap is about, and keeps the last page and the last list of
// sessions it saw, so that a phone without a network still shows them. It holds no token (the sign-in
// cookie is the browser's, HttpOnly); signing out empties what it kept.
const CACHE = "agent-runtime-last-seen";
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

/** What is shown offline: the page, its scripts, who is signed in, and the sessions list. */
function keptOffline(url) {
  if (url.origin !== self.location.origin) return false;
  return url.pathname === "/" || url.pathname.startsWith("/assets/") || url.pathname === "/v1/whoami" || url.pathname === "/v1/sessions";
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  // Every view's address serves the same page: without a network, any of them opens the page kept as "/".
  const page = request.mode === "navigate" && url.origin === self.location.origin;
  if (!page && !keptOffline(url)) return;
  const key = page ? new Request(new URL("/", url)) : request;
  // The network first (always the live answer when there is one); what was kept only without it.
  event.respondWith(
    fetch(request)
      .then(async (response) => {
        if (response.ok && (!page || response.headers.get("content-type")?.startsWith("text/html")))
          await (await caches.open(CACHE)).put(key, response.clone());
        return response;
      })
      .catch(async () => (await caches.match(key, { ignoreVary: true, ignoreSearch: page })) || Response.error()),
  );
});

self.addEventListener("message", (event) => {
  if (event.data === "signed-out") event.waitUntil(caches.delete(CACHE));
});

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
