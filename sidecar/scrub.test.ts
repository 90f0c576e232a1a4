import { describe, expect, it } from "vitest";
import { scrubSecrets, stderrCause } from "./scrub";

describe("scrubSecrets", () => {
  it("removes the values of secret-looking variables and token shapes", () => {
    const env = { ANTHROPIC_API_KEY: "my-anthropic-key-123", HOME: "/home/ana", GITHUB_TOKEN: "ghp_abcdefghijkl" };
    const text = "auth failed for my-anthropic-key-123 with ghp_abcdefghijkl in /home/ana; Authorization: Bearer abc.def.ghi123 sk-ant-api03-abcdefghijklmnop";
    const out = scrubSecrets(text, env);
    expect(out).not.toContain("my-anthropic-key-123");
    expect(out).not.toContain("ghp_abcdefghijkl");
    expect(out).not.toContain("abc.def.ghi123");
    expect(out).not.toContain("sk-ant-api03");
    expect(out).toContain("/home/ana"); // not a secret: left alone
  });

  it("keeps the last lines of stderr as the cause", () => {
    const stderr = Array.from({ length: 50 }, (_, i) => `line ${i}`).join("\n");
    expect(stderrCause(stderr, 3)).toBe("line 47\nline 48\nline 49");
    expect(stderrCause("  \n")).toBeNull();
  });
});
