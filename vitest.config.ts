import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

/** The in-process tier's secrets: made up (never .dev.vars'), only ever seen by the workerd these tests start. */
const WORKERS_TEST_SECRETS = { API_TOKEN: "at_workers-tier-token", TUNNEL_SECRET: "ts_workers-tier-secret" };

/**
 * Three projects (docs/architecture.md, "Tests"). `workers`: the worker and its Durable Objects inside
 * workerd (`@cloudflare/vitest-pool-workers`, the release matching the pinned wrangler and miniflare), with
 * a fake sidecar speaking frames: `*.workers.test.ts`. `unit`: pure modules and routes in Node, beside
 * their code. `node`: the real-runtime suite in test/ (workerd, real sidecars, agents, Chromium), which
 * runs the built bundles. `npm run test:unit` is the first two.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["src/**/*.test.ts", "sidecar/**/*.test.ts", "packages/**/*.test.ts"],
          exclude: ["**/*.workers.test.ts", "**/node_modules/**"],
          // Two of them run the built mock agent (sidecar/dist/mock-agent.js).
          globalSetup: ["test/build-setup.ts"],
          // Modules beside their code: the files of one vitest worker share its module cache (each file
          // restores what it changes: timers, PATH), two workers on two cores.
          isolate: false,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
          // Some start real processes (PTYs, git, the mock agent, bubblewrap): the waits the real-runtime
          // suite has, which these files had while they were in its project.
          testTimeout: 30_000,
          hookTimeout: 30_000,
          expect: { poll: { timeout: 10_000 } },
        },
      },
      {
        test: {
          name: "node",
          include: ["test/**/*.test.ts"],
          globalSetup: ["test/global-setup.ts"],
          // Each file starts its own worker (workerd) and sidecar processes; two cores, so two at a time.
          maxWorkers: 2,
          sequence: { groupOrder: 2 },
          testTimeout: 30_000,
          hookTimeout: 30_000,
          // A poll waits for what a real process shows (a login shell's first prompt takes its rc files'
          // time: half a second on some machines, more under load), not vitest's default of one second.
          expect: { poll: { timeout: 10_000 } },
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { ...WORKERS_TEST_SECRETS, RECONNECT_GRACE_MS: "2000", NOTIFY_BACKOFF_MS: "60000" } },
          }),
        ],
        test: {
          name: "workers",
          include: ["src/**/*.workers.test.ts"],
          // Loading the worker into a fresh isolate was most of each file's time (~3 s): the files of one
          // vitest worker share its isolate, each starting on an empty deployment (fresh-deployment.ts).
          // Two workers on two cores, each with its own workerd.
          isolate: false,
          setupFiles: ["test/workers/fresh-deployment.ts"],
          maxWorkers: 2,
          // First: the fast tier fails fast.
          sequence: { groupOrder: 0 },
          testTimeout: 15_000,
        },
      },
    ],
  },
});
