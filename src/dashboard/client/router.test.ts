import { describe, expect, it } from "vitest";
import { href, machineHref, parseRoute } from "./router";

describe("parseRoute and href", () => {
  it("give every view its own address, and read it back", () => {
    expect(parseRoute("/")).toEqual({ view: "sessions" });
    expect(parseRoute("/sessions")).toEqual({ view: "sessions" });
    expect(parseRoute("/sessions/ses-0123-alice%20laptop")).toEqual({ view: "session", id: "ses-0123-alice laptop" });
    expect(href({ view: "session", id: "ses-0123-alice laptop" })).toBe("/sessions/ses-0123-alice%20laptop");
    expect(parseRoute("/machines")).toEqual({ view: "machines" });
    expect(parseRoute("/team")).toEqual({ view: "team", tab: "policy" });
    expect(parseRoute("/team/mcp")).toEqual({ view: "team", tab: "mcp" });
    expect(href({ view: "team", tab: "policy" })).toBe("/team");
    expect(href({ view: "team", tab: "skills" })).toBe("/team/skills");
    expect(parseRoute("/team/secrets")).toEqual({ view: "missing", path: "/team/secrets" });
    expect(parseRoute("/admin/")).toEqual({ view: "admin" });
  });

  it("opens a machine on its agents, and keeps a tab's query (the folder shown, the process attached)", () => {
    const agents = parseRoute("/machines/local");
    expect(agents).toMatchObject({ view: "machine", machine: "local", tab: "agents" });
    const files = parseRoute("/machines/local/files", "?path=%2Fhome%2Fa%20b");
    expect(files.view === "machine" && files.query.get("path")).toBe("/home/a b");
    expect(machineHref("local", "files", { path: "/home/a b" })).toBe("/machines/local/files?path=%2Fhome%2Fa+b");
    expect(parseRoute("/machines/local/terminal", "?process=proc-7")).toMatchObject({ tab: "terminal" });
  });

  it("opens a session from a link sent before views had paths, and names what it does not know", () => {
    expect(parseRoute("/", "", "#session=ses-ab-local")).toEqual({ view: "session", id: "ses-ab-local" });
    expect(parseRoute("/machines/local/v1")).toEqual({ view: "missing", path: "/machines/local/v1" });
    expect(parseRoute("/nowhere")).toEqual({ view: "missing", path: "/nowhere" });
  });
});
