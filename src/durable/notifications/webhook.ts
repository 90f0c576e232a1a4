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
