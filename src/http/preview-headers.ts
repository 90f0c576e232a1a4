/**
 * What a previewed app sees of the browser's request, and what the browser sees of the app's response
 * (docs/architecture.md, "Previews"; SECURITY.md, "Previews").
 *
 * To the app: the runtime's own cookies and credentials never (the dashboard's sign-in, a preview's pass),
 * and the page's origin as the app's own (`http://localhost:{port}`), so a dev server that checks Host or
 * Origin (Vite, Next.js) answers as it does on the machine.
 *
 * To the browser, in host mode (the preview is its own origin): the app's headers, its cookies bound to that
 * host only. In path mode (under the dashboard's origin), the page is sandboxed without `allow-same-origin`:
 * its scripts run in an opaque origin that cannot read the dashboard's storage or call the API with its
 * cookie; the app's cookies are dropped (they would be the dashboard's origin's) and so is anything that
 * acts on the whole origin (`Clear-Site-Data`); redirects stay under the preview's prefix.
 */

export interface PreviewPlace {
  mode: "host" | "path";
  /** The origin the browser sees (the preview's own in host mode, the dashboard's in path mode). */
  origin: string;
  /** Path mode: what comes before the app's own path (`/machines/{m}/ports/{port}/~{pass}`); "" in host mode. */
  prefix: string;
  port: number;
}

/** The cookie a preview's pass travels in, on a preview's own host. */
export const PREVIEW_COOKIE = "ar_preview";

/** Cookies of the runtime (`ar_…`: the sign-in, a preview's pass): the app never gets them. */
const OWN_COOKIE = /^\s*ar_/;
const DROPPED_REQUEST = ["cf-access-jwt-assertion", "cf-connecting-ip", "cf-ipcountry", "cf-ray", "cf-visitor", "x-stream-holder", "x-forwarded-for"];

/** What a sandboxed page may still do: run scripts, submit forms, open pop-ups and dialogs, download. Not be same-origin. */
export const PATH_MODE_SANDBOX = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads";

export function appRequestHeaders(incoming: Headers, place: PreviewPlace): Headers {
  const headers = new Headers(incoming);
  for (const name of DROPPED_REQUEST) headers.delete(name);
  const cookies = (incoming.get("cookie") ?? "")
    .split(";")
    .filter((cookie) => cookie.trim() && !OWN_COOKIE.test(cookie))
    .join(";")
    .trim();
  if (cookies) headers.set("cookie", cookies);
  else headers.delete("cookie");
  const own = `http://localhost:${place.port}`;
  if (incoming.get("origin") === place.origin) headers.set("origin", own);
  const referer = incoming.get("referer");
  if (referer?.startsWith(`${place.origin}${place.prefix}/`)) headers.set("referer", own + referer.slice(place.origin.length + place.prefix.length));
  headers.set("x-forwarded-host", new URL(place.origin).host);
  headers.set("x-forwarded-proto", new URL(place.origin).protocol.replace(":", ""));
  if (place.prefix) headers.set("x-forwarded-prefix", place.prefix);
  return headers;
}

export function browserResponseHeaders(incoming: Headers, place: PreviewPlace, requestOrigin: string | null): Headers {
  const headers = new Headers(incoming);
  const location = incoming.get("location");
  if (location) headers.set("location", browserLocation(location, place));
  if (place.mode === "host") {
    const cookies = incoming.getSetCookie();
    headers.delete("set-cookie");
    for (const cookie of cookies) headers.append("set-cookie", cookie.replace(/;\s*domain=[^;]*/gi, ""));
    return headers;
  }
  headers.delete("set-cookie");
  headers.delete("clear-site-data");
  headers.append("content-security-policy", PATH_MODE_SANDBOX);
  // The pass is in the path: no address of the page leaves it in a Referer.
  headers.set("referrer-policy", "no-referrer");
  // A sandboxed page's module scripts and fetches are cross-origin (its origin is opaque, `null`).
  if (requestOrigin === "null" && !headers.has("access-control-allow-origin")) headers.set("access-control-allow-origin", "null");
  return headers;
}

/** A redirect to the app's own address (`localhost:{port}`) or to an absolute path stays inside the preview. */
export function browserLocation(location: string, place: PreviewPlace): string {
  let path = location;
  const absolute = /^https?:\/\/([^/?#]+)(.*)$/i.exec(location);
  if (absolute) {
    const host = absolute[1]?.toLowerCase();
    if (host !== `localhost:${place.port}` && host !== `127.0.0.1:${place.port}` && host !== `[::1]:${place.port}`) return location;
    path = absolute[2] || "/";
    if (!path.startsWith("/")) path = `/${path}`;
    return `${place.origin}${place.prefix}${path}`;
  }
  if (path.startsWith("/") && !path.startsWith("//")) return `${place.prefix}${path}`;
  return location;
}
