/**
 * Where a webhook or a push endpoint may point (docs/architecture.md, "Notifications"; SECURITY.md). The
 * worker sends to it from inside the deployment: a URL naming an address inside (loopback, link-local,
 * private, shared CGNAT space, unspecified, multicast or reserved), or a `localhost` name, would make the
 * worker call what its network reaches and the caller's does not. Names are not resolved (the Workers
 * runtime has no resolver; Cloudflare's own network refuses to connect a Worker's fetch to private
 * addresses); every numeric form is caught, since the URL parser already turns decimal, octal and hex IPv4
 * into dotted form and IPv4-mapped IPv6 is read for the IPv4 inside it.
 *
 * `allowPrivate` (the worker variable WEBHOOK_ALLOW_PRIVATE=1, set by `npm start` and the tests) allows
 * http and inside addresses: for a runtime on a laptop, never for a deployment.
 */

/** IPv4 ranges a notification never goes to, as [first octets, prefix length, why]. */
const IPV4_INSIDE: [number[], number, string][] = [
  [[0], 8, "unspecified"],
  [[10], 8, "private"],
  [[100, 64], 10, "shared (CGNAT)"],
  [[127], 8, "loopback"],
  [[169, 254], 16, "link-local"],
  [[172, 16], 12, "private"],
  [[192, 0, 0], 24, "reserved"],
  [[192, 168], 16, "private"],
  [[198, 18], 15, "reserved (benchmarking)"],
  [[224], 4, "multicast"],
  [[240], 4, "reserved"],
];

function ipv4Of(host: string): number[] | null {
  const parts = host.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p))) return null;
  const octets = parts.map(Number);
  return octets.every((o) => o <= 255) ? octets : null;
}

function toNumber(octets: number[]): number {
  return octets.reduce((n, o) => n * 256 + o, 0);
}

function ipv4Inside(octets: number[]): string | null {
  const address = toNumber(octets);
  for (const [first, prefix, why] of IPV4_INSIDE) {
    const base = toNumber([...first, 0, 0, 0, 0].slice(0, 4));
    const size = 2 ** (32 - prefix);
    if (address >= base && address < base + size) return why;
  }
  return null;
}

/** An IPv6 literal (as the URL parser writes it, compressed, without brackets) as eight 16-bit groups. */
function ipv6Groups(host: string): number[] | null {
  if (!host.includes(":")) return null;
  let text = host;
  // An IPv4 tail (`::ffff:1.2.3.4`) is two groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const octets = ipv4Of(v4[1]!);
    if (!octets) return null;
    text = `${text.slice(0, -v4[1]!.length)}${((octets[0]! << 8) | octets[1]!).toString(16)}:${((octets[2]! << 8) | octets[3]!).toString(16)}`;
  }
  const [head, tail, ...more] = text.split("::");
  if (more.length) return null;
  const parse = (s: string | undefined) => (s ? s.split(":").map((g) => Number.parseInt(g, 16)) : []);
  const front = parse(head);
  const back = parse(tail);
  const missing = 8 - front.length - back.length;
  if (tail === undefined ? front.length !== 8 : missing < 1) return null;
  const groups = [...front, ...new Array<number>(tail === undefined ? 0 : missing).fill(0), ...back];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

function ipv6Inside(groups: number[]): string | null {
  const [g0 = 0, , , , , g5 = 0, g6 = 0, g7 = 0] = groups;
  const leadingZeros = groups.slice(0, 5).every((g) => g === 0);
  if (groups.every((g) => g === 0)) return "unspecified";
  if (groups.slice(0, 7).every((g) => g === 0) && g7 === 1) return "loopback";
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d): the IPv4 inside decides.
  const embedded = [g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff];
  if ((leadingZeros && (g5 === 0xffff || g5 === 0)) || (g0 === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0))) {
    const why = ipv4Inside(embedded);
    if (why) return `${why} (as IPv6)`;
  }
  if ((g0 & 0xffc0) === 0xfe80) return "link-local";
  if ((g0 & 0xfe00) === 0xfc00) return "private (unique local)";
  if ((g0 & 0xff00) === 0xff00) return "multicast";
  return null;
}

/** Why a host (as `URL.hostname` gives it) is inside, or null when it is not an address or name inside. */
export function insideHost(hostname: string): string | null {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return "a localhost name";
  const v4 = ipv4Of(host);
  if (v4) return ipv4Inside(v4);
  const v6 = host.startsWith("[") && host.endsWith("]") ? ipv6Groups(host.slice(1, -1)) : null;
  return v6 ? ipv6Inside(v6) : null;
}

/**
 * Why a notification may not be sent to `url` (null: it may). https to an address outside; with
 * `allowPrivate`, http and addresses inside too.
 */
export function refusedTarget(url: string, allowPrivate: boolean): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "is not a URL";
  }
  if (parsed.username || parsed.password) return "may not carry credentials: use the secret";
  if (parsed.protocol !== "https:" && !(allowPrivate && parsed.protocol === "http:")) return "must be https";
  if (allowPrivate) return null;
  const inside = insideHost(parsed.hostname);
  return inside
    ? `may not point inside the deployment's network (${parsed.hostname} is ${inside}); a worker on a laptop allows it with WEBHOOK_ALLOW_PRIVATE=1`
    : null;
}
