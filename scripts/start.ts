/**
 * `npm start`: the worker in workerd (state in .state/), a sidecar connected as machine
 * `local` with the built-in mock agent, and the URL and API token printed. Ctrl-C stops both.
 */
import { buildAll } from "./build";
import { ensureDevVars, ROOT, startSidecar, startWorker } from "../dev/runtime";

// The tests start it after their own build (test/start.test.ts): rebuilding bundles other tests run would race them.
if (process.env.AGENT_RUNTIME_SKIP_BUILD !== "1") await buildAll();
const secrets = ensureDevVars();
const port = process.env.PORT ? Number(process.env.PORT) : 8787;
// `{url}/v1/...` addresses this machine; without DEFAULT_MACHINE every call would have to name one.
// A team's registry mirror (or a local one) is passed through; unset, the worker reads the official registry.
// Previews get their own origins under `*.localhost` (browsers resolve it to this machine): `{port}--local.localhost`.
const vars: Record<string, string> = {
  DEFAULT_MACHINE: "local",
  PREVIEW_DOMAIN: "localhost",
  ...(process.env.ACP_REGISTRY_URL ? { ACP_REGISTRY_URL: process.env.ACP_REGISTRY_URL } : {}),
};
// Where the worker's and the sidecar's state live (AGENT_RUNTIME_STATE_DIR: elsewhere, e.g. for a smoke run).
const stateDir = process.env.AGENT_RUNTIME_STATE_DIR ?? `${ROOT}/.state`;
const worker = await startWorker({ secrets, persistTo: stateDir, port, vars });
const sidecarOptions = { url: worker.url, machine: "local", tunnelSecret: secrets.TUNNEL_SECRET, dataDir: `${stateDir}/sidecar`, echo: true };
// The ports previews may open are the machine owner's choice, here as for any sidecar (its environment).
const exposed = process.env.AGENT_RUNTIME_EXPOSE_PORTS?.trim() ?? "";
let sidecar = await startSidecar(sidecarOptions);
await sidecar.connected(15_000);

process.stdout.write(`
agent-runtime is running locally (machine 'local', agent 'mock' ready).
url: ${worker.url}
token: ${secrets.API_TOKEN}
sidecar: pid ${sidecar.child.pid}

try:  curl -H "Authorization: Bearer ${secrets.API_TOKEN}" ${worker.url}/v1/machines
dashboard: ${worker.url}/   ACP clients (the ACP SDK's http-client or ws-client): ${worker.url}/acp?agent=mock
previews: ${exposed ? `ports ${exposed} (Machines → local → Ports)` : "no port exposed; e.g. AGENT_RUNTIME_EXPOSE_PORTS=5173 npm start"}
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

/**
 * The local sidecar is restarted as a service manager would (the systemd unit `service install` writes
 * does the same): after 1 s, doubling to 30 s while it keeps failing, back to 1 s once it ran a minute.
 * Exit 2 (its token was refused) and 3 (another sidecar took the machine over) are not restarted, as there.
 */
const NOT_RESTARTED: Record<number, string> = { 2: "the worker refused its token", 3: "another sidecar took machine 'local' over" };
let backoffMs = 1_000;
function superviseSidecar(): void {
  const startedAt = Date.now();
  sidecar.child.once("exit", (code) => {
    if (stopping) return;
    const why = code !== null ? NOT_RESTARTED[code] : undefined;
    if (why) {
      process.stderr.write(`the sidecar exited (${code}): ${why}; not restarted (the worker keeps running)\n`);
      return;
    }
    if (Date.now() - startedAt > 60_000) backoffMs = 1_000;
    process.stderr.write(`the sidecar exited (${code ?? "signal"}); restarting it in ${backoffMs / 1000} s\n`);
    setTimeout(() => void restartSidecar(), backoffMs);
    backoffMs = Math.min(backoffMs * 2, 30_000);
  });
}
async function restartSidecar(): Promise<void> {
  if (stopping) return;
  sidecar = await startSidecar(sidecarOptions);
  superviseSidecar();
  try {
    await sidecar.connected(15_000);
    process.stdout.write(`sidecar: restarted, pid ${sidecar.child.pid}\n`);
  } catch (err) {
    process.stderr.write(`the restarted sidecar did not connect: ${err instanceof Error ? err.message : String(err)}\n`);
  }
}
superviseSidecar();
