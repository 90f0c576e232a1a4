import { describe, expect, it } from "vitest";
import { unreachableText } from "./machine-reach";

describe("a machine tab's word on what it shows", () => {
  it("says the read's error, else that the machine is offline, else nothing; and that what is shown is old", () => {
    expect(unreachableText("local is not connected", true, "local", true)).toBe("local is not connected (shown: the list as last read)");
    expect(unreachableText("local is not connected", false, "local", false)).toBe("local is not connected");
    expect(unreachableText("", false, "local", true)).toBe("local is offline (shown: the list as last read)");
    expect(unreachableText("", false, "local", false)).toBe("local is offline");
    expect(unreachableText("", true, "local", true)).toBe("");
    expect(unreachableText("", null, "local", true)).toBe("");
  });
});
