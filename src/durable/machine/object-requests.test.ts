/** The worker's private requests to a machine's object, as a route writes them and the object reads them back. */
import { describe, expect, it } from "vitest";
import { acpSocketUpgrade, objectRequestOf, previewTarget, terminalUpgrade } from "./object-requests";

const holder = { tokenId: "0123456789abcdef", name: 'Zoë\'s laptop, "main"', expiresAtMs: 1_900_000_000_000 };

describe("object requests", () => {
  it("a terminal's upgrade carries its process and its holder, whatever characters they hold", () => {
    const request = terminalUpgrade("proc 1/ä?#", holder);
    expect(request.headers.get("upgrade")).toBe("websocket");
    expect(objectRequestOf(request)).toEqual({ kind: "terminal", process: "proc 1/ä?#", holder });
  });

  it("an ACP socket's upgrade carries its agent and holder; one without them reads as none", () => {
    expect(objectRequestOf(acpSocketUpgrade("claude-acp", holder))).toEqual({ kind: "acp-socket", agent: "claude-acp", holder });
    expect(objectRequestOf(new Request("https://machine/acp-socket?agent=Not%20An%20Agent"))).toEqual({ kind: "acp-socket", agent: null, holder: null });
  });

  it("a preview's request carries its port, the app's path with its query, and the pass", () => {
    const target = previewTarget(5173, "/a b/?q=1&r=2#x", "local.0123456789abcdef0123456789abcdef");
    expect(objectRequestOf(new Request(target, { method: "POST", body: "x" }))).toEqual({
      kind: "preview",
      port: 5173,
      path: "/a b/?q=1&r=2#x",
      pass: "local.0123456789abcdef0123456789abcdef",
    });
  });

  it("anything else is the sidecar's tunnel", () => {
    expect(objectRequestOf(new Request("https://worker.example/_tunnel/laptop"))).toEqual({ kind: "tunnel" });
  });
});
