import { describe, expect, it } from "vitest";
import { withCtrl } from "./keys";

describe("withCtrl", () => {
  it("turns a letter into its control character, as a terminal sends Ctrl+letter", () => {
    expect(withCtrl("c")).toBe("\x03");
    expect(withCtrl("C")).toBe("\x03");
    expect(withCtrl("u")).toBe("\x15");
    expect(withCtrl("[")).toBe("\x1b");
    expect(withCtrl("1")).toBe("1");
    expect(withCtrl("ab")).toBe("ab");
  });
});
