import { describe, expect, it } from "vitest";
import { ExposedPorts } from "./exposed-ports";

describe("ExposedPorts", () => {
  it("allows the ports and ranges its owner named, and nothing else", () => {
    const exposed = ExposedPorts.parse(" 3000-3999, 5173 ");
    expect(exposed.spec).toBe("3000-3999,5173");
    expect([2999, 3000, 3999, 4000, 5173, 5174].map((p) => exposed.allows(p))).toEqual([false, true, true, false, true, false]);
  });

  it("allows nothing by default, and says how the owner allows a port", () => {
    expect(ExposedPorts.NONE.allows(5173)).toBe(false);
    expect(ExposedPorts.parse("").allows(80)).toBe(false);
    expect(ExposedPorts.NONE.refusal(5173)).toContain("--expose-ports 5173");
  });

  it("refuses what is not a port or a range", () => {
    for (const bad of ["abc", "0", "70000", "5000-4000", "1-2-3", "80,", "3000-"]) {
      if (bad === "80,") expect(ExposedPorts.parse(bad).spec).toBe("80");
      else expect(() => ExposedPorts.parse(bad), bad).toThrow(/not a port or a range/);
    }
  });
});
