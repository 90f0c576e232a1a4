import { describe, expect, it } from "vitest";
import type { McpServerConfig } from "@agent-runtime/protocol/mcp";
import { CODEX_BLOCK_BEGIN, CODEX_BLOCK_END, updateMcpFile } from "./mcp-formats";

const BEARER = "Bearer $" + "{GITHUB_TOKEN}"; // what the agents expand, written literally
const github: McpServerConfig = { type: "remote", url: "https://mcp.example.com/mcp", bearerTokenEnvVar: "GITHUB_TOKEN" };
const files: McpServerConfig = { type: "local", command: "npx", args: ["-y", "files-mcp"], env: { ROOT: "/work" } };

describe("updateMcpFile", () => {
  it("writes Claude Code's mcpServers and keeps everything else in ~/.claude.json", () => {
    const existing = JSON.stringify({ numStartups: 3, mcpServers: { mine: { type: "stdio", command: "my-server" } } });
    const { text, written, conflicts } = updateMcpFile("claude", existing, [], { github, files });
    const doc = JSON.parse(text);
    expect(doc.numStartups).toBe(3);
    expect(doc.mcpServers.mine).toEqual({ type: "stdio", command: "my-server" });
    expect(doc.mcpServers.github).toEqual({ type: "http", url: github.url, headers: { Authorization: BEARER } });
    expect(doc.mcpServers.files).toEqual({ type: "stdio", command: "npx", args: ["-y", "files-mcp"], env: { ROOT: "/work" } });
    expect(written).toEqual(["github", "files"]);
    expect(conflicts).toEqual([]);
  });

  it("removes what it wrote before and no longer is in the document, and never a developer's own server", () => {
    const existing = JSON.stringify({ mcpServers: { old: { command: "x" }, github: { command: "developer's own" } } });
    const { text, written, conflicts } = updateMcpFile("gemini", existing, ["old"], { github });
    expect(JSON.parse(text).mcpServers).toEqual({ github: { command: "developer's own" } });
    expect(written).toEqual([]);
    expect(conflicts).toEqual(["github"]);
  });

  it("spells servers as Gemini CLI and OpenCode read them", () => {
    const gemini = JSON.parse(updateMcpFile("gemini", null, [], { github, files }).text).mcpServers;
    expect(gemini.github).toEqual({ httpUrl: github.url, headers: { Authorization: BEARER } });
    expect(gemini.files).toEqual({ command: "npx", args: ["-y", "files-mcp"], env: { ROOT: "/work" } });
    const opencode = JSON.parse(updateMcpFile("opencode", '{"$schema":"https://opencode.ai/config.json"}', [], { github, files }).text);
    expect(opencode.$schema).toBe("https://opencode.ai/config.json");
    expect(opencode.mcp.files).toEqual({ type: "local", command: ["npx", "-y", "files-mcp"], environment: { ROOT: "/work" } });
    expect(opencode.mcp.github).toMatchObject({ type: "remote", url: github.url });
  });

  it("leaves out disabled servers", () => {
    const { written } = updateMcpFile("claude", null, [], { files: { ...files, enabled: false }, github });
    expect(written).toEqual(["github"]);
  });

  it("refuses a file that is not a JSON object rather than overwrite it", () => {
    expect(() => updateMcpFile("claude", "[1,2]", [], { github })).toThrow(/JSON object/);
    expect(() => updateMcpFile("claude", "{not json", [], { github })).toThrow();
  });

  it("keeps Codex's TOML as it is and rewrites one marked block at the end", () => {
    const existing = `model = "o3"\n\n[mcp_servers.mine]\ncommand = "mine"\n`;
    const first = updateMcpFile("codex", existing, [], { files, github, mine: files });
    expect(first.conflicts).toEqual(["mine"]);
    expect(first.text.startsWith(existing)).toBe(true);
    expect(first.text).toContain(`${CODEX_BLOCK_BEGIN}\n[mcp_servers."files"]\ncommand = "npx"\nargs = ["-y", "files-mcp"]\nenv = { "ROOT" = "/work" }`);
    expect(first.text).toContain(`[mcp_servers."github"]\nurl = "https://mcp.example.com/mcp"\nbearer_token_env_var = "GITHUB_TOKEN"`);
    const second = updateMcpFile("codex", first.text, first.written, { github });
    expect(second.text).not.toContain("files-mcp");
    expect(second.text.split(CODEX_BLOCK_BEGIN).length).toBe(2);
    const none = updateMcpFile("codex", second.text, second.written, {});
    expect(none.text).toBe(existing);
    expect(none.text).not.toContain(CODEX_BLOCK_END);
  });
});
