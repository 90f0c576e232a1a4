import { describe, expect, it } from "vitest";
import { envAuthMethod } from "./auth";

const codexMethods = {
  authMethods: [
    { id: "chatgpt", name: "Login with ChatGPT" },
    { type: "env_var", id: "codex-api-key", name: "Use CODEX_API_KEY", vars: [{ name: "CODEX_API_KEY" }] },
    { type: "env_var", id: "openai-api-key", name: "Use OPENAI_API_KEY", vars: [{ name: "OPENAI_API_KEY" }] },
  ],
};

describe("envAuthMethod", () => {
  it("picks the first env_var method whose variables are all set", () => {
    expect(envAuthMethod(codexMethods, { OPENAI_API_KEY: "k" })).toBe("openai-api-key");
    expect(envAuthMethod(codexMethods, { CODEX_API_KEY: "k", OPENAI_API_KEY: "k" })).toBe("codex-api-key");
  });

  it("never picks an interactive method, nor one whose variable is empty", () => {
    expect(envAuthMethod(codexMethods, { OPENAI_API_KEY: " " })).toBeNull();
    expect(envAuthMethod({ authMethods: [{ id: "oauth-personal" }] }, {})).toBeNull();
    expect(envAuthMethod("not an object", {})).toBeNull();
  });

  it("layers environments as a spread would: a later one's value wins, even an empty one", () => {
    expect(envAuthMethod(codexMethods, { OPENAI_API_KEY: "k" }, {})).toBe("openai-api-key");
    expect(envAuthMethod(codexMethods, {}, { OPENAI_API_KEY: "k" })).toBe("openai-api-key");
    expect(envAuthMethod(codexMethods, { OPENAI_API_KEY: "k" }, { OPENAI_API_KEY: "" })).toBeNull();
    expect(envAuthMethod(codexMethods, { OPENAI_API_KEY: "" }, { CODEX_API_KEY: "k" })).toBe("codex-api-key");
  });
});
