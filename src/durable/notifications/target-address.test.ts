import { describe, expect, it } from "vitest";
import { insideHost, refusedTarget } from "./target-address";

/** What the URL parser makes of a host, as the worker sees it. */
const host = (url: string) => new URL(url).hostname;

describe("refusedTarget", () => {
  it("takes https to a public name or address", () => {
    expect(refusedTarget("https://hooks.example.com/x", false)).toBeNull();
    expect(refusedTarget("https://93.184.216.34/hook", false)).toBeNull();
    expect(refusedTarget("https://[2606:4700::1111]/hook", false)).toBeNull();
  });

  it("refuses http, other schemes and credentials, whatever the host", () => {
    expect(refusedTarget("http://hooks.example.com/x", false)).toMatch(/https/);
    expect(refusedTarget("ftp://example.com/", true)).toMatch(/https/);
    expect(refusedTarget("https://user:pw@hooks.example.com/", false)).toMatch(/credentials/);
    expect(refusedTarget("not a url", false)).toMatch(/not a URL/);
  });

  it.each([
    ["https://127.0.0.1/", "loopback"],
    ["https://127.1.2.3:8443/", "loopback"],
    ["https://localhost/", "localhost"],
    ["https://LOCALHOST./", "localhost"],
    ["https://evil.localhost/", "localhost"],
    ["https://10.1.2.3/", "private"],
    ["https://172.16.0.1/", "private"],
    ["https://172.31.255.255/", "private"],
    ["https://192.168.1.1/", "private"],
    ["https://169.254.169.254/latest/meta-data", "link-local"],
    ["https://100.64.0.1/", "CGNAT"],
    ["https://100.127.255.255/", "CGNAT"],
    ["https://0.0.0.0/", "unspecified"],
    ["https://224.0.0.1/", "multicast"],
    ["https://2130706433/", "loopback"], // decimal
    ["https://0x7f000001/", "loopback"], // hex
    ["https://0177.0.0.1/", "loopback"], // octal
    ["https://0x7f.1/", "loopback"], // mixed short form
    ["https://3232235777/", "private"], // 192.168.1.1
    ["https://[::1]/", "loopback"],
    ["https://[::]/", "unspecified"],
    ["https://[fe80::1]/", "link-local"],
    ["https://[fc00::1]/", "unique local"],
    ["https://[fd12:3456::1]/", "unique local"],
    ["https://[::ffff:127.0.0.1]/", "loopback (as IPv6)"],
    ["https://[::ffff:10.0.0.1]/", "private (as IPv6)"],
    ["https://[::ffff:a9fe:a9fe]/", "link-local (as IPv6)"],
    ["https://[64:ff9b::192.168.0.1]/", "private (as IPv6)"],
  ])("refuses %s (%s), with the way to allow it locally", (url, why) => {
    const refused = refusedTarget(url, false);
    expect(refused).toContain(why);
    expect(refused).toContain("WEBHOOK_ALLOW_PRIVATE=1");
  });

  it("keeps 172.15/16, 172.32/16, 100.63 and 100.128 outside (the ranges end where they end)", () => {
    for (const url of ["https://172.15.0.1/", "https://172.32.0.1/", "https://100.63.255.255/", "https://100.128.0.0/", "https://[2001:db8::1]/"])
      expect(refusedTarget(url, false), url).toBeNull();
  });

  it("with WEBHOOK_ALLOW_PRIVATE, takes http and addresses inside (a runtime on a laptop)", () => {
    expect(refusedTarget("http://127.0.0.1:9000/hook", true)).toBeNull();
    expect(refusedTarget("http://localhost:9000/hook", true)).toBeNull();
    expect(refusedTarget("https://10.0.0.5/hook", true)).toBeNull();
    expect(refusedTarget("https://user:pw@127.0.0.1/", true)).toMatch(/credentials/);
  });
});

describe("insideHost", () => {
  it("reads the host as the URL parser leaves it", () => {
    expect(host("https://0x7f000001/")).toBe("127.0.0.1");
    expect(insideHost(host("https://[::ffff:7f00:1]/"))).toBe("loopback (as IPv6)");
    expect(insideHost("example.com")).toBeNull();
  });
});
