/**
 * Sandboxes' figures (docs/architecture.md, "Sandboxes"), in `npm run bench` (alone: BENCH_ONLY=sandbox):
 * the built mock agent started by the sidecar's own ACP servers on real bubblewrap, `workspace` with an
 * allowlist naming one loopback port, against the same agent unsandboxed, alternated run by run. Goals:
 * starting a sandboxed agent ≤ +100 ms; a turn's round trip inside ≤ 1.05× outside; a connection through
 * the egress proxy (socat inside, the proxy outside) ≤ +5 ms over a direct one.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { AcpServers } from "../sidecar/acp/acp-bridge";
import { ProcessManager } from "../sidecar/processes/processes";
import { ownerLimits } from "../sidecar/sandbox/owner-limits";
import { Sandboxes } from "../sidecar/sandbox/sandboxes";

export interface SandboxFigures {
  runs: number;
  /** `initialize` of a new server: the agent's process started, its answer back (median ms). */
  startMs: { outside: number; inside: number };
  /** `session/new` in a folder the sandbox did not yet let the agent write: under `workspace` the agent starts again. */
  firstSessionMs: { outside: number; inside: number };
  /** A prompt's round trip (median of TURNS). */
  turnMs: { outside: number; inside: number };
  /** A new HTTP connection and GET to a loopback server, from the agent's side (median of CONNECTIONS). */
  connectionMs: { direct: number; proxied: number };
}

const RUNS = 7;
const TURNS = 60;
const CONNECTIONS = 40;
const MOCK = resolve(import.meta.dirname, "../sidecar/dist/mock-agent.js");

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A script that times `n` new connections and GETs of `url` (through HTTP_PROXY when set) and prints the median ms. */
const timingScript = (url: string, n: number) =>
  `node -e "const http=require('http');const p=process.env.HTTP_PROXY?new URL(process.env.HTTP_PROXY):null;const u=new URL('${url}');const t=[];` +
  `(async()=>{for(let i=0;i<${n};i++){const s=performance.now();await new Promise((ok,no)=>{const r=http.request(p?{host:p.hostname,port:p.port,path:u.href,agent:false}:{host:u.hostname,port:u.port,path:u.pathname,agent:false},(res)=>{res.resume();res.on('end',ok)});r.on('error',no);r.end()});t.push(performance.now()-s)}` +
  `t.sort((a,b)=>a-b);console.log('MEDIAN='+t[Math.floor(t.length/2)].toFixed(3))})()"`;

/** Whether this machine has what the sandbox step runs on (scripts/ensure-sandbox-tools.sh installs them). */
export function sandboxToolsPresent(): boolean {
  const has = (tool: string) => {
    try {
      execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  };
  return has("bwrap") && has("socat");
}

export async function benchSandbox(): Promise<SandboxFigures> {
  const root = mkdtempSync(join(tmpdir(), "bench-sandbox-"));
  const home = join(root, "home");
  const work = join(root, "work");
  mkdirSync(home, { recursive: true });
  mkdirSync(work);
  execFileSync("git", ["init", "-q", work]);
  let server: Server | null = null;
  const port = await new Promise<number>((ok) => {
    server = createServer((_req, res) => res.end("ok")).listen(0, "127.0.0.1", () => ok((server!.address() as { port: number }).port));
  });
  const machine = (floor: { sandbox?: string; allowNetwork?: string }) => {
    const processes = new ProcessManager();
    const sandboxes = new Sandboxes({
      limits: ownerLimits(floor, null, home),
      home,
      dataDir: join(root, "data"),
      configDir: join(home, ".config", "agent-runtime"),
    });
    const launch = async () => ({ command: process.execPath, args: [MOCK], cwd: root, env: { HOME: home, MOCK_AGENT_STATE_DIR: join(root, "data", "mock") } });
    const acp = new AcpServers(
      processes,
      launch,
      { maxEvents: 10_000, maxBytes: 1 << 24, endedKept: 4, endedKeptMs: 1000, idleStopMs: 0 },
      async () => [],
      null,
      sandboxes,
    );
    let id = 1;
    const call = async (serverId: string, method: string, params: unknown, extra: Record<string, unknown> = {}) => {
      const answer = await acp.post({ serverId, message: JSON.stringify({ jsonrpc: "2.0", id, method, params }), method, awaitId: id++, ...extra } as never);
      if (answer.status !== 200) throw new Error(`${method}: ${answer.status}`);
      return JSON.parse(answer.body) as { result?: Record<string, unknown> };
    };
    return { acp, processes, call };
  };
  const outside = machine({});
  const inside = machine({ sandbox: "workspace", allowNetwork: `127.0.0.1:${port}` });
  const figures = { start: { outside: [] as number[], inside: [] as number[] }, first: { outside: [] as number[], inside: [] as number[] } };
  const sessions: { outside: [string, string] | null; inside: [string, string] | null } = { outside: null, inside: null };
  try {
    for (let run = 0; run < RUNS; run++) {
      for (const [name, m] of [
        ["outside", outside],
        ["inside", inside],
      ] as const) {
        const serverId = `${name}-${run}`;
        let started = performance.now();
        await m.call(serverId, "initialize", { protocolVersion: 1, clientCapabilities: {} }, { agent: "mock" });
        figures.start[name].push(performance.now() - started);
        started = performance.now();
        const created = await m.call(serverId, "session/new", { cwd: work, mcpServers: [] }, { cwd: work });
        figures.first[name].push(performance.now() - started);
        if (run === RUNS - 1) sessions[name] = [serverId, created.result!.sessionId as string];
        else await m.acp.delete(serverId);
      }
    }
    const turns = async (m: ReturnType<typeof machine>, [serverId, sessionId]: [string, string], n: number, text = "hi") => {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const started = performance.now();
        await m.call(serverId, "session/prompt", { sessionId, prompt: [{ type: "text", text }] });
        times.push(performance.now() - started);
      }
      return times;
    };
    // Alternated in rounds of ten, so a busy moment of the machine falls on both.
    const turnTimes = { outside: [] as number[], inside: [] as number[] };
    for (let round = 0; round < TURNS / 10; round++) {
      turnTimes.outside.push(...(await turns(outside, sessions.outside!, 10)));
      turnTimes.inside.push(...(await turns(inside, sessions.inside!, 10)));
    }
    const connectionMedian = async (m: ReturnType<typeof machine>, session: [string, string]) => {
      const from = m.acp.lookup(session[0])!.server.log.lastSeq;
      await turns(m, session, 1, `/sh ${timingScript(`http://127.0.0.1:${port}/`, CONNECTIONS)}`);
      const said = m.acp
        .lookup(session[0])!
        .server.log.since(from)
        .events.map(([, json]) => json)
        .join("");
      const found = /MEDIAN=([\d.]+)/.exec(said);
      if (!found) throw new Error(`the timing script said nothing: ${said.slice(-400)}`);
      return Number(found[1]);
    };
    return {
      runs: RUNS,
      startMs: { outside: median(figures.start.outside), inside: median(figures.start.inside) },
      firstSessionMs: { outside: median(figures.first.outside), inside: median(figures.first.inside) },
      turnMs: { outside: median(turnTimes.outside), inside: median(turnTimes.inside) },
      connectionMs: { direct: await connectionMedian(outside, sessions.outside!), proxied: await connectionMedian(inside, sessions.inside!) },
    };
  } finally {
    await outside.processes.stopAll();
    await inside.processes.stopAll();
    outside.acp.dispose();
    inside.acp.dispose();
    (server as Server | null)?.close();
    rmSync(root, { recursive: true, force: true });
  }
}

export function sandboxReport(f: SandboxFigures): string {
  const ms = (n: number) => `${n.toFixed(1)} ms`;
  const verdict = (met: boolean, goal: string) => (met ? `within ${goal}` : `OVER ${goal}`);
  const startAdded = f.startMs.inside - f.startMs.outside;
  const connectionAdded = f.connectionMs.proxied - f.connectionMs.direct;
  const turnRatio = f.turnMs.inside / f.turnMs.outside;
  return [
    `Sandboxes (mock agent, workspace + a loopback allowlist, real bubblewrap; medians of ${f.runs} starts, alternated):`,
    `  agent start (initialize)       ${ms(f.startMs.inside)} inside, ${ms(f.startMs.outside)} outside: +${ms(startAdded)} (${verdict(startAdded <= 100, "+100 ms")})`,
    `  first session/new (restart)    ${ms(f.firstSessionMs.inside)} inside, ${ms(f.firstSessionMs.outside)} outside (the agent starts again with the folder writable)`,
    `  a turn's round trip            ${ms(f.turnMs.inside)} inside, ${ms(f.turnMs.outside)} outside: ${turnRatio.toFixed(3)}× (${verdict(turnRatio <= 1.05, "1.05×")})`,
    `  a new connection and GET       ${ms(f.connectionMs.proxied)} through socat and the egress proxy, ${ms(f.connectionMs.direct)} direct: +${ms(connectionAdded)} (${verdict(connectionAdded <= 5, "+5 ms")})`,
  ].join("\n");
}
