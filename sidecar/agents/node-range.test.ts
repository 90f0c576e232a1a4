import { describe, expect, it } from "vitest";
import { satisfiesRange } from "./node-range";

describe("satisfiesRange", () => {
  it("reads the engines ranges packages write", () => {
    expect(satisfiesRange("v20.19.5", ">=22")).toBe(false);
    expect(satisfiesRange("v24.11.0", ">=22")).toBe(true);
    expect(satisfiesRange("v22.11.0", ">=20.19.0 <21 || >=22.12")).toBe(false);
    expect(satisfiesRange("v20.19.5", ">=20.19.0 <21 || >=22.12")).toBe(true);
    expect(satisfiesRange("v22.3.0", "^22")).toBe(true);
    expect(satisfiesRange("v23.0.0", "^22")).toBe(false);
    expect(satisfiesRange("v22.3.0", "22.x")).toBe(true);
    expect(satisfiesRange("v20.1.0", ">= 18")).toBe(true);
  });

  it("reads a caret on 0.x as npm does", () => {
    expect(satisfiesRange("0.166.4", "^0.166.0")).toBe(true);
    expect(satisfiesRange("0.169.0", "^0.166.0")).toBe(false);
    expect(satisfiesRange("0.0.4", "^0.0.3")).toBe(false);
    expect(satisfiesRange("1.9.0", "^1.2.0")).toBe(true);
  });

  it("takes no range, or one it cannot read, as satisfied", () => {
    expect(satisfiesRange("v20.0.0", undefined)).toBe(true);
    expect(satisfiesRange("v20.0.0", "lts/*")).toBe(true);
  });
});
