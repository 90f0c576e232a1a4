import { describe, expect, it } from "vitest";
import { isOneOfSecrets, timingSafeEqualText } from "./secrets";

describe("isOneOfSecrets", () => {
  it("accepts exactly one of the configured secrets, and again on later calls (encoded once, compared each time)", () => {
    const secrets = ["first-secret", "second-secret-é"];
    for (let round = 0; round < 3; round++) {
      expect(isOneOfSecrets("first-secret", secrets)).toBe(true);
      expect(isOneOfSecrets("second-secret-é", secrets)).toBe(true);
      expect(isOneOfSecrets("second-secret-e", secrets)).toBe(false);
      expect(isOneOfSecrets("first-secre", secrets)).toBe(false);
      expect(isOneOfSecrets("first-secretX", secrets)).toBe(false);
      expect(isOneOfSecrets("", secrets)).toBe(false);
    }
    expect(isOneOfSecrets("first-secret", [])).toBe(false);
    expect(isOneOfSecrets("first-secret", ["rotated"])).toBe(false); // a changed secret is its own entry
    expect(isOneOfSecrets("rotated", ["rotated"])).toBe(true);
  });

  it("agrees with timingSafeEqualText on many secrets (past the bound of those kept encoded)", () => {
    const secrets = Array.from({ length: 100 }, (_, i) => `secret-${i}`);
    for (const [i, secret] of secrets.entries()) {
      expect(isOneOfSecrets(secret, secrets)).toBe(true);
      expect(isOneOfSecrets(secret, [secrets[(i + 1) % secrets.length] as string])).toBe(timingSafeEqualText(secret, `secret-${(i + 1) % 100}`));
    }
  });
});
