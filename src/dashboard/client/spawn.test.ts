import { describe, expect, it } from "vitest";
import { spawnRequest } from "./spawn";

describe("spawnRequest", () => {
  it("runs a plain command as it is, and a line with shell syntax in sh -c", () => {
    expect(spawnRequest("npm  test --watch=false", "", false)).toEqual({ command: "npm", args: ["test", "--watch=false"], tty: false, interactive: false });
    expect(spawnRequest("echo $HOME | tr a-z A-Z", " /tmp ", true)).toEqual({
      command: "sh",
      args: ["-c", "echo $HOME | tr a-z A-Z"],
      tty: true,
      interactive: true,
      cwd: "/tmp",
    });
    expect(spawnRequest("git commit -m 'two words'", "", false).command).toBe("sh");
  });
});
