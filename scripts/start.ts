/**
 * `npm start`: the worker in workerd (state in .state/), a sidecar connected as machine
 * `local` with the built-in mock agent, and the URL and API token printed. Ctrl-C stops both.
 */
import { buildAll } from "./build";
import { ensureDevVars, ROOT, startSidecar, startWorker } from "../dev/runtime";

await buildAll();
const secrets = ensureDevVars();
const port = process.env.PORT ? Number(process.env.PORT) : 8787;
// `{url}/v1/...` addresses this machine; without DEFAULT_MACHINE every call would have to name one.
// A team's registry mirror (or a local one) is passed through; unset, the worker reads the official registry.
const vars: Record<string, string> = { DEFAULT_MACHINE: "local", ...(process.env.ACP_REGISTRY_URL ? { ACP_REGISTRY_URL: process.env.ACP_REGISTRY_URL } : {}) };
// Where the worker's and the sidecar's state live (AGENT_RUNTIME_STATE_DIR: elsewhere, e.g. for a smoke run).
const stateDir = process.env.AGENT_RUNTIME_STATE_DIR ?? `${ROOT}/.state`;
const worker = await startWorker({ secrets, persistTo: stateDir, port, vars });
const sidecar = await startSidecar({
  url: worker.url,
  machine: "local",
  tunnelSecret: secrets.TUNNEL_SECRET,
  dataDir: `${stateDir}/sidecar`,
  echo: true,
});
await sidecar.connected(15_000);

process.stdout.write(`
agent-runtime is running locally (machine 'local', agent 'mock' ready).
url: ${worker.url}
token: ${secrets.API_TOKEN}

try:  curl -H "Authorization: Bearer ${secrets.API_TOKEN}" ${worker.url}/v1/machines
dashboard: ${worker.url}/   ACP clients (the ACP SDK's http-client or ws-client): ${worker.url}/acp?agent=mock
Ctrl-C stops the worker and the sidecar.
`);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await sidecar.stop("SIGTERM");
  await worker.dispose();
  process.exit(0);
}
process.on("SIGINT", () => void stop());
// However this script ends, the sidecar does not outlive it (a terminal's Ctrl-C reaches both anyway).
process.on("exit", () => {
  if (sidecar.child.exitCode === null) sidecar.child.kill("SIGTERM");
});
process.on("SIGTERM", () => void stop());
sidecar.child.once("exit", (code) => {
  if (!stopping) {
    process.stderr.write(`the sidecar exited (${code}); stopping\n`);
    void stop();
  }
});
