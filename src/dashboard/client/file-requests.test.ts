import { describe, expect, it } from "vitest";
import { fileRequestOf, linesOf } from "./file-requests";

describe("file requests", () => {
  it("reads the lines an agent asks for (1-based, limited)", () => {
    expect(linesOf("a\nb\nc\nd", 2, 2)).toBe("b\nc");
    expect(linesOf("a\nb\nc", 3)).toBe("c");
    expect(linesOf("a\nb", undefined, 1)).toBe("a");
    expect(linesOf("a\nb")).toBe("a\nb");
  });

  it("knows an agent's file requests from its other messages, and reads only what they carry", () => {
    expect(fileRequestOf({ id: 1, method: "fs/read_text_file", params: { sessionId: "s", path: "/a", line: 2 } })).toEqual({
      id: 1,
      method: "fs/read_text_file",
      params: { sessionId: "s", path: "/a", line: 2 },
    });
    expect(fileRequestOf({ method: "fs/write_text_file", params: { path: "/a" } })).toBeNull();
    expect(fileRequestOf({ id: 1, method: "session/request_permission", params: { path: "/a" } })).toBeNull();
    expect(fileRequestOf({ id: 1, method: "fs/write_text_file", params: { path: "/a", content: 3 } })).toBeNull();
    expect(fileRequestOf({ id: 1, method: "fs/read_text_file" })).toBeNull();
  });
});
