import { describe, expect, it } from "vitest";
import { satisfiesNode } from "./node-range";

describe("satisfiesNode", () => {
  it("reads the engines ranges packages write", () => {
    expect(satisfiesNode("v20.19.5", ">=22")).toBe(false);
    expect(satisfiesNode("v24.11.0", ">=22")).toBe(true);
    expect(satisfiesNode("v22.11.0", ">=20.19.0 <21 || >=22.12")).toBe(false);
    expect(satisfiesNode("v20.19.5", ">=20.19.0 <21 || >=22.12")).toBe(true);
    expect(satisfiesNode("v22.3.0", "^22")).toBe(true);
    expect(satisfiesNode("v23.0.0", "^22")).toBe(false);
    expect(satisfiesNode("v22.3.0", "22.x")).toBe(true);
    expect(satisfiesNode("v20.1.0", ">= 18")).toBe(true);
  });

  it("takes no range, or one it cannot read, as satisfied", () => {
    expect(satisfiesNode("v20.0.0", undefined)).toBe(true);
    expect(satisfiesNode("v20.0.0", "lts/*")).toBe(true);
  });
});
