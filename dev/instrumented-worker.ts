/**
 * The worker as tests and benchmarks measure it (`startWorker({ instrumented: true })`): the same code, with
 * its Durable Objects wrapped to count how often the runtime ran them and how often they wrote to storage.
 * The counters live here, never in the production classes: what the idle-cost test and `npm run bench:scale`
 * read (`debugStats()`) is what the runtime did to the objects from outside, not what they say of themselves.
 */
import type { Env } from "../src/env";
import type { ObjectStats } from "./object-stats";
import worker, { MachineObject as Machine, TeamObject as Team, TokenObject } from "../src/worker";

/** Entry points the runtime calls by name; everything else reached from outside is an RPC call. */
const HANDLERS = { fetch: "fetch", webSocketMessage: "message", webSocketClose: "close", webSocketError: "close", alarm: "alarm" } as const;

const WRITE_STATEMENT = /^\s*(INSERT|UPDATE|DELETE|REPLACE)\b/i;
/** A `ports` frame as the sidecar encodes it (one JSON object, its kind first). */
const PORTS_FRAME = /^\{"t":"ports"[,}]/;

/** Whose counters a storage (or its SQL) writes to: the runtime's own classes are patched once, per instance. */
const statsOf = new WeakMap<object, ObjectStats>();
let patched = false;

/**
 * Count this object's storage writes. The runtime's storage and SQL classes are patched once in this isolate
 * (an object hands its own `ctx.storage.sql` to helpers, and the runtime accepts no stand-in for `ctx`).
 */
function countWrites(ctx: DurableObjectState, stats: ObjectStats): void {
  statsOf.set(ctx.storage, stats);
  statsOf.set(ctx.storage.sql, stats);
  if (patched) return;
  patched = true;
  const sqlProto = Object.getPrototypeOf(ctx.storage.sql) as { exec: (query: string, ...bindings: unknown[]) => unknown };
  const exec = sqlProto.exec;
  sqlProto.exec = function (this: object, query: string, ...bindings: unknown[]) {
    const counts = statsOf.get(this);
    if (counts && WRITE_STATEMENT.test(query)) counts.writes++;
    return exec.call(this, query, ...bindings);
  };
  const storageProto = Object.getPrototypeOf(ctx.storage) as Record<"put" | "delete" | "deleteAll", (...args: unknown[]) => unknown>;
  for (const name of ["put", "delete", "deleteAll"] as const) {
    const original = storageProto[name];
    storageProto[name] = function (this: object, ...args: unknown[]) {
      const counts = statsOf.get(this);
      if (counts) counts.writes++;
      return original.apply(this, args);
    };
  }
}

/**
 * The object as the runtime reaches it: each method looked up from outside is counted, then run on the
 * object itself (so its own calls to its methods are not counted). `debugStats` answers the counts.
 */
function counted<T extends object>(object: T, stats: ObjectStats, lastPingMs: () => number | null): T {
  return new Proxy(object, {
    get(target, prop, receiver) {
      if (prop === "debugStats") return () => ({ ...stats, invocations: { ...stats.invocations }, lastPingMs: lastPingMs() });
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function" || typeof prop !== "string" || prop === "constructor") return value;
      const kind = prop in HANDLERS ? HANDLERS[prop as keyof typeof HANDLERS] : "rpc";
      return (...args: unknown[]) => {
        stats.invocations[kind]++;
        if (kind === "message" && typeof args[1] === "string" && PORTS_FRAME.test(args[1])) stats.portsFrames++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

function newStats(): ObjectStats {
  return { invocations: { fetch: 0, message: 0, close: 0, alarm: 0, rpc: 0 }, writes: 0, portsFrames: 0, lastPingMs: null };
}

export class MachineObject extends Machine {
  constructor(ctx: DurableObjectState, env: Env) {
    const stats = newStats();
    countWrites(ctx, stats);
    super(ctx, env);
    // biome-ignore lint/correctness/noConstructorReturn: the runtime must reach the object through its counter
    return counted(this, stats, () => {
      const ws = ctx.getWebSockets("sidecar")[0];
      return ws ? (ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? null) : null;
    });
  }
}

export class TeamObject extends Team {
  constructor(ctx: DurableObjectState, env: Env) {
    const stats = newStats();
    countWrites(ctx, stats);
    super(ctx, env);
    // biome-ignore lint/correctness/noConstructorReturn: the runtime must reach the object through its counter
    return counted(this, stats, () => null);
  }
}

export { TokenObject };
export default worker;
