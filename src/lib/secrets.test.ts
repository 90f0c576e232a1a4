import { describe, expect, it } from "vitest";
import { isOneOfSecrets, timingSafeEqualText } from "./secrets";

describe("timingSafeEqualText", () => {
  it("is true exactly for equal strings, whatever their lengths and characters", () => {
    const texts = [
      "",
      "a",
      "ab",
      "ba",
      "abc",
      "art.0123456789abcdef.secret",
      "art.0123456789abcdef.secreT",
      "é",
      "e\u0301",
      "😀",
      "\ud83d",
      "\ude00",
      "\ud83d\ude01",
    ];
    for (const a of texts) for (const b of texts) expect(timingSafeEqualText(a, b), `${JSON.stringify(a)} ${JSON.stringify(b)}`).toBe(a === b);
  });
});

describe("isOneOfSecrets", () => {
  it("accepts exactly one of the configured secrets", () => {
    const secrets = ["first-secret", "second-secret-é"];
    expect(isOneOfSecrets("first-secret", secrets)).toBe(true);
    expect(isOneOfSecrets("second-secret-é", secrets)).toBe(true);
    expect(isOneOfSecrets("second-secret-e", secrets)).toBe(false);
    expect(isOneOfSecrets("first-secre", secrets)).toBe(false);
    expect(isOneOfSecrets("first-secretX", secrets)).toBe(false);
    expect(isOneOfSecrets("", secrets)).toBe(false);
    expect(isOneOfSecrets("first-secret", [])).toBe(false);
  });
});
