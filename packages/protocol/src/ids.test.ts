import { describe, expect, it } from "vitest";
import { machineOfRoutedId, machineRoutedId, runtimeId } from "./ids";

const HEX = "0123456789abcdef";

describe("runtimeId", () => {
  const Id = runtimeId("IdsTestKept", "sch", "schedule");

  it("takes the prefix and 16 hex digits, nothing else", () => {
    expect(Id.safeParse(`sch-${HEX}`).success).toBe(true);
    for (const bad of [`trg-${HEX}`, `sch-${HEX}0`, `sch-${HEX.toUpperCase()}`, `sch-${HEX}-m1`, `xsch-${HEX}`]) {
      expect(Id.safeParse(bad).success, bad).toBe(false);
    }
  });

  it("says what it expected", () => {
    expect(Id.safeParse("sch-1").error?.issues[0]?.message).toBe("a schedule id as the runtime hands it out (sch-<16 hex>)");
  });
});

describe("machineRoutedId", () => {
  const Id = machineRoutedId("IdsTestRouted", "ses", "session");

  it("ends with the machine, and names it back", () => {
    const id = `ses-${HEX}-lab-2.local`;
    expect(Id.parse(id)).toBe(id);
    expect(machineOfRoutedId("ses", id)).toBe("lab-2.local");
    expect(machineOfRoutedId("task", `task-${HEX}-m`)).toBe("m");
  });

  it("refuses an id without a machine, with a machine that is not an identifier, or longer than 160", () => {
    for (const bad of [`ses-${HEX}`, `ses-${HEX}-`, `ses-${HEX}-.m`, `ses-${HEX}-m/x`, `ses-${HEX}-${"m".repeat(140)}`]) {
      expect(Id.safeParse(bad).success, bad).toBe(false);
    }
    expect(Id.safeParse(`ses-${HEX}`).error?.issues[0]?.message).toBe("a session id as the runtime hands it out (ses-<16 hex>-<machine>)");
  });
});
