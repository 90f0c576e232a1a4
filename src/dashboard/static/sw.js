// The dashboard's service worker: it shows the notifications this deployment pushes (docs/architecture.md,
// "Notifications"), opens the session a tap is about, and keeps the last page, the last list of sessions
// and the sessions a person opened (record and transcript) it saw, so that a phone without a network
// still shows them. It holds no token (the sign-in
// cookie is the browser's, HttpOnly); signing out empties what it kept.
const CACHE = "agent-runtime-last-seen";
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

/** A session's record and its transcript as JSON (never its live stream): an opened session stays readable. */
const SESSION_READ = /^\/v1\/sessions\/ses-[0-9a-f]{16}-[A-Za-z0-9._-]+(\/transcript)?$/;
/** How many sessions' transcripts are kept (the oldest kept is dropped first). */
const KEPT_TRANSCRIPTS = 20;

/** What is shown offline: the page, its scripts, who is signed in, the sessions list, and the sessions opened. */
function keptOffline(url, request) {
  if (url.origin !== self.location.origin) return false;
  if (SESSION_READ.test(url.pathname)) return !(request.headers.get("accept") || "").includes("text/event-stream");
  return url.pathname === "/" || url.pathname.startsWith("/assets/") || url.pathname === "/v1/whoami" || url.pathname === "/v1/sessions";
}

/** Keep at most KEPT_TRANSCRIPTS transcripts: the ones opened last. */
async function trimTranscripts(cache) {
  const transcripts = (await cache.keys()).filter((r) => new URL(r.url).pathname.endsWith("/transcript"));
  for (const old of transcripts.slice(0, Math.max(0, transcripts.length - KEPT_TRANSCRIPTS))) await cache.delete(old);
}

/** A preview in path mode (`/machines/{m}/ports/{port}/…`) is an app's, never the dashboard's page: left alone. */
const PREVIEW = /^\/machines\/[^/]+\/ports\//;

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (PREVIEW.test(url.pathname)) return;
  // Every view's address serves the same page: without a network, any of them opens the page kept as "/".
  const page = request.mode === "navigate" && url.origin === self.location.origin;
  if (!page && !keptOffline(url, request)) return;
  const key = page ? new Request(new URL("/", url)) : request;
  // The network first (always the live answer when there is one); what was kept only without it.
  event.respondWith(
    fetch(request)
      .then(async (response) => {
        if (response.ok && (!page || response.headers.get("content-type")?.startsWith("text/html"))) {
          const cache = await caches.open(CACHE);
          // One kept answer per transcript, whatever page of it was asked last.
          await cache.put(url.pathname.endsWith("/transcript") ? new Request(new URL(url.pathname, url)) : key, response.clone());
          if (url.pathname.endsWith("/transcript")) await trimTranscripts(cache);
        }
        return response;
      })
      .catch(async () => (await caches.match(key, { ignoreVary: true, ignoreSearch: page || url.pathname.endsWith("/transcript") })) || Response.error()),
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
    Promise.all([
      self.registration.showNotification(message.title || "agent-runtime", {
        body: message.body || "",
        tag: message.tag || undefined,
        data: { url: message.url || "/" },
        // A question waits for a person: it stays until it is seen.
        requireInteraction: message.event === "permission.requested" || message.event === "elicitation.requested" || message.event === "agent.login",
        icon: "/icon.svg",
      }),
      // An open dashboard reads its sessions again now: its waiting count follows the push, not its next poll.
      self.clients.matchAll({ type: "window" }).then((windows) => {
        for (const client of windows) client.postMessage({ type: "pushed", event: message.event || null });
      }),
    ]),
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
