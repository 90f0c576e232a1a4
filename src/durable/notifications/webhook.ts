/**
 * Webhooks (docs/architecture.md, "Notifications"): each delivery is signed so its receiver can tell it
 * came from this deployment and was not replayed later: `X-Agent-Runtime-Signature: t=<unix seconds>,
 * v1=<hex HMAC-SHA256 of "<t>.<body>" with the subscription's secret>`.
 */
const encoder = new TextEncoder();

export async function signature(secret: string, body: string, unixSeconds: number): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(`${unixSeconds}.${body}`)));
  return `t=${unixSeconds},v1=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Where a subscription may send to: https, or http to this machine when the worker itself runs locally
 * (its own address is loopback). Never a private or other address over http.
 */
export function allowedTarget(url: string, workerHostname: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "not a URL";
  }
  if (parsed.username || parsed.password) return "credentials in the URL are not allowed: use the secret";
  if (parsed.protocol === "https:") return null;
  const loopback = (host: string) => host === "127.0.0.1" || host === "localhost" || host === "[::1]" || host === "::1";
  if (parsed.protocol === "http:" && loopback(parsed.hostname) && loopback(workerHostname)) return null;
  return "must be https (http only to 127.0.0.1 or localhost while the worker runs locally)";
}
