import { describe, expect, it } from "vitest";
import { McpConfig } from "@agent-runtime/protocol/mcp";
import { SkillsConfig } from "@agent-runtime/protocol/skills";
import { KINDS, pairsOf, withEntry } from "./team-forms";

describe("the team documents' forms", () => {
  it("make an MCP server from its fields, keep what the form does not show, and give the document the worker takes", () => {
    const original = { key: "github", value: { type: "local", command: "old", timeoutMs: 5000 } };
    const made = KINDS.mcp.entryOf(
      { ...KINDS.mcp.formOf(original), command: " npx ", args: "-y\n\n@modelcontextprotocol/server-github ", env: "LOG_LEVEL=debug" },
      original,
      [],
    );
    expect(made).toEqual({
      entry: {
        key: "github",
        value: { type: "local", command: "npx", args: ["-y", "@modelcontextprotocol/server-github"], env: { LOG_LEVEL: "debug" }, timeoutMs: 5000 },
      },
    });
    if (!("entry" in made)) throw new Error("no entry");
    const document = KINDS.mcp.document([made.entry]);
    expect(McpConfig.parse(document)).toEqual(document);
    // …and back: the form shows what the document holds.
    expect(KINDS.mcp.formOf(KINDS.mcp.entries(document)[0]!)).toMatchObject({
      name: "github",
      args: "-y\n@modelcontextprotocol/server-github",
      env: "LOG_LEVEL=debug",
    });
  });

  it("say each mistake by its field, before anything is saved", () => {
    const mcp = KINDS.mcp.entryOf({ ...KINDS.mcp.formOf(null), name: "bad name!", type: "remote", url: "ftp://x", headers: "no colon here" }, null, []);
    expect(Object.keys("errors" in mcp ? mcp.errors : {}).sort()).toEqual(["headers", "name", "url"]);
    const taken = KINDS.mcp.entryOf({ ...KINDS.mcp.formOf(null), name: "github", command: "npx" }, null, ["github"]);
    expect("errors" in taken && taken.errors.name).toContain("already");
    const skill = KINDS.skills.entryOf({ ...KINDS.skills.formOf(null), type: "github", source: "not a repo" }, null, []);
    expect("errors" in skill && skill.errors.source).toContain("owner/repo");
    const agent = KINDS.agents.entryOf({ agent: "claude", version: "latest", env: "ANTHROPIC_API_KEY=sk-1" }, null, []);
    expect("errors" in agent && agent.errors.env).toContain("looks like a secret");
  });

  it("make a skill source (only the skills named; no ref for a local folder) and number the sources as the worker does", () => {
    const made = KINDS.skills.entryOf({ type: "local", source: "~/skills", ref: "main", skills: "pdf, review", subpath: "" }, null, []);
    expect(made).toEqual({ entry: { key: "new", value: { type: "local", source: "~/skills", skills: ["pdf", "review"] } } });
    if (!("entry" in made)) throw new Error("no entry");
    const first = { key: "0", value: { type: "github", source: "acme/skills" } };
    const list = withEntry([first], made.entry, null, false);
    expect(list.map((e) => e.key)).toEqual(["0", "1"]);
    expect(SkillsConfig.parse(KINDS.skills.document(list)).sources).toHaveLength(2);
    // A 400's field names the entry it is about.
    expect(KINDS.skills.fieldOf("sources.1.source")).toEqual({ key: "1", field: "source" });
    expect(KINDS.mcp.fieldOf("servers.github.url")).toEqual({ key: "github", field: "url" });
  });

  it("read NAME=value and Name: value lines", () => {
    expect(pairsOf("A=1\n B = two=2 \n", "=")).toEqual({ pairs: { A: "1", B: "two=2" } });
    expect(pairsOf("Authorization: Bearer x", ":")).toEqual({ pairs: { Authorization: "Bearer x" } });
    expect(pairsOf("=1", "=")).toEqual({ error: '"=1" is not NAME=value' });
  });
});
