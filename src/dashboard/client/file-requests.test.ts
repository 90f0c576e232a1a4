import { describe, expect, it } from "vitest";
import { isFileRequest, linesOf } from "./file-requests";

describe("file requests", () => {
  it("reads the lines an agent asks for (1-based, limited)", () => {
    expect(linesOf("a\nb\nc\nd", 2, 2)).toBe("b\nc");
    expect(linesOf("a\nb\nc", 3)).toBe("c");
    expect(linesOf("a\nb", undefined, 1)).toBe("a");
    expect(linesOf("a\nb")).toBe("a\nb");
  });

  it("knows an agent's file requests from its other messages", () => {
    expect(isFileRequest({ id: 1, method: "fs/read_text_file" })).toBe(true);
    expect(isFileRequest({ method: "fs/write_text_file" })).toBe(false);
    expect(isFileRequest({ id: 1, method: "session/request_permission" })).toBe(false);
  });
});
