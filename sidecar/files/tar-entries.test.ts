import { describe, expect, it } from "vitest";
import { entryPathInside, refuseTarEntry } from "./tar-entries";

describe("refuseTarEntry", () => {
  it("accepts files, folders and links that stay inside", () => {
    expect(refuseTarEntry({ path: "a/b.txt", type: "File" })).toBeNull();
    expect(refuseTarEntry({ path: "./a/", type: "Directory" })).toBeNull();
    expect(refuseTarEntry({ path: "a/link", type: "SymbolicLink", linkpath: "../b.txt" })).toBeNull();
    expect(refuseTarEntry({ path: "a/hard", type: "Link", linkpath: "a/b.txt" })).toBeNull();
  });

  it("refuses entries that leave the folder", () => {
    expect(refuseTarEntry({ path: "../evil", type: "File" })).toMatch(/outside the folder/);
    expect(refuseTarEntry({ path: "a/../../evil", type: "File" })).toMatch(/outside the folder/);
    expect(refuseTarEntry({ path: "/etc/passwd", type: "File" })).toMatch(/outside the folder/);
  });

  it("refuses links that point outside, absolute or relative", () => {
    expect(refuseTarEntry({ path: "link", type: "SymbolicLink", linkpath: "/etc" })).toMatch(/links to/);
    expect(refuseTarEntry({ path: "a/link", type: "SymbolicLink", linkpath: "../../x" })).toMatch(/links to/);
    expect(refuseTarEntry({ path: "hard", type: "Link", linkpath: "../x" })).toMatch(/links to/);
  });

  it("refuses devices and FIFOs", () => {
    expect(refuseTarEntry({ path: "dev", type: "CharacterDevice" })).toMatch(/CharacterDevice/);
    expect(refuseTarEntry({ path: "pipe", type: "FIFO" })).toMatch(/FIFO/);
  });

  it("names where an entry lands", () => {
    expect(entryPathInside({ path: "./a/b/", type: "Directory" })).toBe("a/b");
    expect(entryPathInside({ path: "./", type: "Directory" })).toBe("");
  });
});
