import { describe, expect, it } from "vitest";
import type { Identity } from "./access";
import { mintTicket, TICKET_TTL_MS, verifyTicket } from "./tickets";

const member: Identity = { name: "ana", role: "member", machines: ["laptop"], tokenId: "t1", expiresAtMs: null };

describe("tickets", () => {
  it("name the identity they were minted for, for a minute", async () => {
    const now = 1_000_000;
    const { ticket, expiresAtMs } = await mintTicket("secret", member, now);
    expect(expiresAtMs).toBe(now + TICKET_TTL_MS);
    expect(await verifyTicket("secret", ticket, now + 1000)).toEqual({ ok: true, identity: member });
    expect(await verifyTicket("secret", ticket, now + TICKET_TTL_MS)).toMatchObject({ ok: false, reason: expect.stringMatching(/expired/) });
  });

  it("never outlive the token they came from", async () => {
    const { expiresAtMs } = await mintTicket("secret", { ...member, expiresAtMs: 5000 }, 1000);
    expect(expiresAtMs).toBe(5000);
  });

  it("are refused when forged, altered or signed with another secret", async () => {
    const { ticket } = await mintTicket("secret", member, 0);
    expect((await verifyTicket("other", ticket, 1)).ok).toBe(false);
    const [prefix, payload, mac] = ticket.split(".");
    const claims = JSON.parse(atob(payload!.replace(/-/g, "+").replace(/_/g, "/")));
    const admin = btoa(JSON.stringify({ ...claims, role: "admin" }))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "");
    expect((await verifyTicket("secret", `${prefix}.${admin}.${mac}`, 1)).ok).toBe(false);
    expect((await verifyTicket("secret", "tkt.x.y", 1)).ok).toBe(false);
    expect((await verifyTicket("secret", "tkt", 1)).ok).toBe(false);
  });
});
