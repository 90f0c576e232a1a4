import { describe, expect, it } from "vitest";
import { appPathOf, appRequestHeaders, browserResponseHeaders, grantRedirect, hostOnlyCookie, type PreviewPlace } from "./preview-headers";

const host: PreviewPlace = { mode: "host", origin: "https://3000--laptop.preview.example.com", prefix: "", port: 3000 };

describe("an app's Set-Cookie in host mode", () => {
  it.each([
    ["sid=1; Domain=example.com; Path=/", "sid=1; Path=/"],
    ["sid=1; Domain =localhost; Path=/", "sid=1; Path=/"],
    ["sid=1;\tdomain\t=\t.localhost", "sid=1"],
    ["sid=1; DOMAIN=.preview.example.com; HttpOnly", "sid=1; HttpOnly"],
    ["sid=1;domain=a;Domain=b; SameSite=Lax", "sid=1; SameSite=Lax"],
    ["sid=1; Domain", "sid=1"],
    // The rest is kept as the app wrote it, value and unknown attributes alike.
    ["sid=a b%20c; Path=/x; Max-Age=60; Secure; Partitioned; Priority=High", "sid=a b%20c; Path=/x; Max-Age=60; Secure; Partitioned; Priority=High"],
    ["domain=1; Path=/", "domain=1; Path=/"],
  ])("%j reaches the browser as %j", (sent, seen) => {
    expect(hostOnlyCookie(sent)).toBe(seen);
    const headers = new Headers();
    headers.append("set-cookie", sent);
    expect(browserResponseHeaders(headers, host, null).getSetCookie()).toEqual([seen]);
  });

  it("drops a cookie named as the runtime's own", () => {
    for (const sent of ["__Host-ar_preview=x; Path=/; Secure", "ar_signin=x", " AR_preview=x", "__Secure-ar_x=1", "ar_preview"])
      expect(hostOnlyCookie(sent)).toBeNull();
    expect(hostOnlyCookie("star_count=3")).toBe("star_count=3");
  });
});

describe("what the app receives", () => {
  it("never the runtime's credentials: Authorization, Proxy-Authorization, its cookies", () => {
    const incoming = new Headers({
      authorization: "Bearer at_secret",
      "proxy-authorization": "Basic eDp5",
      cookie: "__Host-ar_preview=laptop.0123; ar_signin=x; theme=dark",
      accept: "text/html",
    });
    const seen = appRequestHeaders(incoming, host);
    expect(seen.get("authorization")).toBeNull();
    expect(seen.get("proxy-authorization")).toBeNull();
    expect(seen.get("cookie")).toBe("theme=dark");
    expect(seen.get("accept")).toBe("text/html");
  });

  it("never the runtime's query token, the rest of the query byte for byte", () => {
    expect(appPathOf("/a", "?access_token=at_x&q=a+b%20c&access_token=y")).toBe("/a?q=a+b%20c");
    expect(appPathOf("/a", "?access%5Ftoken=at_x&x=1")).toBe("/a?x=1");
    expect(appPathOf("/a", "?access_token=at_x")).toBe("/a");
    expect(appPathOf("/a", "?token=mine&%zz=1")).toBe("/a?token=mine&%zz=1");
    expect(appPathOf("/a", "")).toBe("/a");
  });
});

describe("a grant link's `to`", () => {
  it.each([
    ["/app/x?y=1#z", "/app/x?y=1#z"],
    ["/%5Cevil.example/x", "/"],
    ["/\\evil.example/x", "/"],
    ["/%09/evil.example/x", "/"],
    ["/\t/evil.example/x", "/"],
    ["//evil.example/x", "/"],
    ["/%2F/evil.example/x", "/"],
    ["https://evil.example/", "/"],
    ["javascript:alert(1)", "/"],
    ["/%E0%A4%A", "/"],
    [null, "/"],
  ])("%j redirects to %j", (to, where) => {
    expect(grantRedirect(to, host.origin)).toBe(where);
  });
});
