/**
 * What a previewed app sees of the browser's request, and what the browser sees of the app's response
 * (docs/architecture.md, "Previews"; SECURITY.md, "Previews").
 *
 * To the app: the runtime's own cookies and credentials never (the dashboard's sign-in, a preview's pass, an
 * `Authorization` or `Proxy-Authorization` header, an `?access_token=`), and the page's origin as the app's own (`http://localhost:{port}`), so a dev server that checks Host or
 * Origin (Vite, Next.js) answers as it does on the machine.
 *
 * To the browser, in host mode (the preview is its own origin): the app's headers, its cookies bound to that
 * host only (a `Domain` attribute, however spelled, is dropped; so is a cookie named as the runtime's). In path mode (under the dashboard's origin), the page is sandboxed without `allow-same-origin`:
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

/**
 * The cookie a preview's pass travels in, on a preview's own host. `__Host-`: browsers keep it to that host,
 * Secure, `Path=/`, and refuse one of that name set with a `Domain`, so no sibling preview's page (its scripts
 * can write `document.cookie` for the parent domain) can plant a pass of its choosing here.
 */
export const PREVIEW_COOKIE = "__Host-ar_preview";

/** Cookies of the runtime (`ar_…`, `__Host-ar_…`: the sign-in, a preview's pass): the app never gets them, nor sets them. */
const OWN_COOKIE = /^\s*(__Host-|__Secure-)?ar_/i;
const DROPPED_REQUEST = [
  // A token meant for the runtime (an API client's, a person's) is not the app's to see.
  "authorization",
  "proxy-authorization",
  "cf-access-jwt-assertion",
  "cf-connecting-ip",
  "cf-ipcountry",
  "cf-ray",
  "cf-visitor",
  "x-stream-holder",
  "x-forwarded-for",
];
/** The runtime's token in a URL (src/http/query-token.ts): never passed on to an app. */
const QUERY_TOKENS = new Set(["access_token"]);

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
    for (const cookie of cookies) {
      const kept = hostOnlyCookie(cookie);
      if (kept !== null) headers.append("set-cookie", kept);
    }
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

/** RFC 6265 §5.2's whitespace (SP and HTAB), and the control characters no browser keeps in a name. */
const TRIMMED = /^[\s\x00-\x1f\x7f]+|[\s\x00-\x1f\x7f]+$/g;

/**
 * An app's `Set-Cookie` as its host's alone: split as RFC 6265 §5.2 does (the name-value pair up to the first
 * `;`, then attributes separated by `;`, each name the text before its first `=`, trimmed, compared without
 * case), every `Domain` attribute dropped whatever its spelling (`Domain =x`, `\tdomain\t=\t.x`), the rest kept
 * as the app wrote it. A cookie named as the runtime's own is dropped whole (null). Hand-written rather than
 * a parser's parse-and-serialize: those re-encode the value (the app would read another one back) or refuse
 * cookies browsers accept.
 */
export function hostOnlyCookie(setCookie: string): string | null {
  const [pair = "", ...attributes] = setCookie.split(";");
  // The name, or a nameless cookie's value (`Set-Cookie: ar_x` is sent back as `ar_x`): the runtime's either way.
  if (OWN_COOKIE.test(pair.replace(TRIMMED, ""))) return null;
  const kept = attributes.filter((attribute) => {
    const at = attribute.indexOf("=");
    return (at < 0 ? attribute : attribute.slice(0, at)).replace(TRIMMED, "").toLowerCase() !== "domain";
  });
  return [pair, ...kept].join(";");
}

/**
 * The path and query the app is asked for: the browser's, less the runtime's query token. The rest of the
 * query is passed on byte for byte (a parser's re-encoding would change what the app reads).
 */
export function appPathOf(pathname: string, search: string): string {
  if (!search) return pathname;
  const kept = search
    .slice(1)
    .split("&")
    .filter((pair) => {
      const name = pair.split("=", 1)[0] ?? "";
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, " "));
      } catch {
        // Not valid percent-encoding: compared as written.
      }
      return !QUERY_TOKENS.has(decoded);
    });
  return kept.length > 0 ? `${pathname}?${kept.join("&")}` : pathname;
}

/** Backslashes (browsers read `/\\host` as `//host`) and control characters (they drop tabs and newlines). */
const UNSAFE_TARGET = /[\\\x00-\x1f\x7f]/;

/**
 * Where a grant link's `to` sends the browser: a path resolved against the preview's own origin, and only if it
 * stays there (`/%5Cevil.example`, `/\tevil.example` do not); `/` otherwise.
 */
export function grantRedirect(to: string | null, origin: string): string {
  if (!to?.startsWith("/") || UNSAFE_TARGET.test(to)) return "/";
  let decoded = to;
  try {
    decoded = decodeURIComponent(to);
  } catch {
    return "/";
  }
  // What the address decodes to must be as safe: a server or a browser may decode it before resolving.
  if (UNSAFE_TARGET.test(decoded) || decoded.startsWith("//")) return "/";
  let target: URL;
  try {
    target = new URL(to, origin);
  } catch {
    return "/";
  }
  if (target.origin !== origin) return "/";
  return `${target.pathname}${target.search}${target.hash}`;
}
