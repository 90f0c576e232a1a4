/**
 * The real agents the tests install and drive offline (test/real-agents.test.ts, and the sandboxed
 * Claude Code of test/real-agent-sandbox.test.ts): the registry entries the tests' registry serves, and
 * for each agent how it is installed and pointed at the fake model server of test/fake-models.ts.
 */
import type { FakeModels } from "./fake-models";

export const INSTALL_TIMEOUT_MS = 5 * 60_000;
export const TURN_TIMEOUT_MS = 120_000;

/**
 * The registry the tests serve, mirroring the official one's entries for these agents (as a team's mirror
 * would, with their npm packages): what each installs, at which version, is the registry's.
 */
export const REGISTRY = [
  { id: "claude-acp", name: "Claude Agent", version: "0.101.0", distribution: { npx: { package: "@agentclientprotocol/claude-agent-acp@0.101.0" } } },
  { id: "codex-acp", name: "Codex", version: "2.6.0", distribution: { npx: { package: "@agentclientprotocol/codex-acp@2.6.0" } } },
  { id: "gemini", name: "Gemini CLI", version: "0.61.0", distribution: { npx: { package: "@google/gemini-cli@0.61.0", args: ["--experimental-acp"] } } },
  { id: "opencode", name: "OpenCode", version: "1.18.33", distribution: { npx: { package: "opencode-ai@1.18.33", args: ["acp"] } } },
  { id: "pi-acp", name: "pi", version: "0.0.23", distribution: { npx: { package: "pi-acp@0.0.23" } } },
];

/**
 * Each agent, by its registry id: what the install request adds to the registry's entry, the version of
 * what runs its turns (the test checks it is what runs), the adapter the registry named, and how it finds
 * the fake. `folder`: where the runtime keeps it (by its built-in name).
 */
export const AGENTS = [
  {
    id: "gemini",
    folder: "gemini",
    install: {},
    version: "0.61.0",
    env: (fake: FakeModels) => ({ GEMINI_API_KEY: "fake-gemini-key", GOOGLE_GEMINI_BASE_URL: fake.url }),
  },
  {
    id: "claude-acp",
    folder: "claude",
    // Claude Code itself pinned; its adapter (Node >= 22, here the sidecar's Node 24) is the registry's.
    install: { agentVersion: "2.1.330" },
    version: "2.1.330",
    adapter: "0.101.0",
    env: (fake: FakeModels) => ({ ANTHROPIC_API_KEY: "fake-anthropic-key", ANTHROPIC_BASE_URL: fake.url, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1" }),
    // claude-agent-acp starts sessions in "auto" mode (a classifier approves edits): asked to ask, as its users can.
    files: () => ({ ".claude/settings.json": JSON.stringify({ permissions: { defaultMode: "default" } }) }),
  },
  {
    id: "opencode",
    folder: "opencode",
    install: {},
    version: "1.18.33",
    env: () => ({ ANTHROPIC_API_KEY: "fake-anthropic-key" }),
    // OpenCode is pointed at another endpoint in its own configuration (as its users do), and asked to ask before editing.
    files: (fake: FakeModels) => ({
      ".config/opencode/opencode.json": JSON.stringify({
        model: "anthropic/claude-sonnet-4-5",
        permission: { edit: "ask" },
        provider: { anthropic: { options: { baseURL: `${fake.url}/v1` } } },
      }),
    }),
  },
  {
    id: "codex-acp",
    folder: "codex",
    // codex-acp 2.6 runs the installed Codex, at the version it depends on (^0.166.0) unless asked.
    install: {},
    version: "0.166.0",
    adapter: "2.6.0",
    // codex-acp 2.6 starts in "Auto review" (asks only for what it deems unsafe): started read-only, it asks before editing.
    env: () => ({ OPENAI_API_KEY: "fake-openai-key", INITIAL_AGENT_MODE: "read-only" }),
    // Codex is pointed at another endpoint with a model provider in its configuration.
    files: (fake: FakeModels) => ({
      ".codex/config.toml": [
        'model = "gpt-5-codex"',
        'model_provider = "fake"',
        "[model_providers.fake]",
        'name = "fake"',
        `base_url = "${fake.url}/v1"`,
        'env_key = "OPENAI_API_KEY"',
        'wire_api = "responses"',
        "",
      ].join("\n"),
    }),
    // Its sandbox helper (bwrap), shipped by @openai/codex, is on the adapter's PATH.
    helpers: "codex-resources",
  },
  {
    id: "pi-acp",
    folder: "pi",
    // No versions named: the registry's pi-acp, and the pi that works with it.
    install: {},
    version: "0.73.1",
    env: () => ({ ANTHROPIC_API_KEY: "fake-anthropic-key" }),
    // pi is pointed at another endpoint in its models.json (a built-in provider routed elsewhere).
    files: (fake: FakeModels) => ({
      ".pi/agent/models.json": JSON.stringify({ providers: { anthropic: { baseUrl: fake.url } } }),
      ".pi/agent/settings.json": JSON.stringify({ defaultProvider: "anthropic", defaultModel: "claude-sonnet-4-20250514", quietStartup: true }),
    }),
    // pi runs its tools without asking (its capabilities say `permissions: false`).
    asksPermission: false,
  },
] as const;
