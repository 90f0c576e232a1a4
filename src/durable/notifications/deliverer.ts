/**
 * Deliveries of notifications (docs/architecture.md, "Notifications"), kept in the SQLite storage of the
 * Durable Object an event happened in (a machine's; the team's for a subscription's test), sent from its
 * alarm: never on the path of the request that caused the event. A delivery is tried up to MAX_ATTEMPTS
 * times, with backoff after a 429, a 5xx or a network failure; a push service that says the subscription
 * is gone (404, 410) ends it. Every attempt is recorded.
 */
import { DeliveryAttempt, EventType, MAX_ATTEMPTS, NotificationPayload, SubscriptionTarget } from "@agent-runtime/protocol/notifications";
import { z } from "zod";
import { encryptPayload, fromBase64url, type VapidKey, vapidAuthorization } from "./web-push";
import { signature } from "./webhook";
import { refusedTarget } from "./target-address";
import type { WorkerSettings } from "../../settings";
import { type Migration, migrate } from "../storage/migrations";
import { Count, Earliest, jsonText, oneRow, rows } from "../storage/stored";
import type { Timed } from "../storage/alarm";

/** Attempts kept for `GET /v1/notifications/deliveries` in one object (the oldest go first). */
const ATTEMPTS_KEPT = 5_000;
/** Deliveries sent per alarm run (the rest go on the next run, at once). */
const PER_RUN = 25;
const SEND_TIMEOUT_MS = 10_000;

const DeliveryRow = z.object({
  id: z.string(),
  subscription_id: z.string(),
  event: z.string(),
  event_id: z.string(),
  machine: z.string().nullable(),
  payload: jsonText(NotificationPayload),
  target: jsonText(SubscriptionTarget),
  attempts: z.number(),
  next_at: z.number(),
});
type DeliveryRow = z.output<typeof DeliveryRow>;

/** How urgent a push is, and how long a push service should keep it for a phone that is off. */
const PUSH_OPTIONS: Record<EventType, { ttl: number; urgency: "high" | "normal" | "low" }> = {
  "permission.requested": { ttl: 3600, urgency: "high" },
  "elicitation.requested": { ttl: 3600, urgency: "high" },
  "agent.login": { ttl: 3600, urgency: "high" },
  "turn.failed": { ttl: 86_400, urgency: "normal" },
  "turn.finished": { ttl: 86_400, urgency: "normal" },
  "sandbox.blocked": { ttl: 86_400, urgency: "normal" },
  "machine.offline": { ttl: 3600, urgency: "low" },
  "machine.online": { ttl: 3600, urgency: "low" },
  test: { ttl: 600, urgency: "normal" },
};

export interface DelivererOptions {
  /** Ask for the object's alarm at (or before) this time. */
  wake: (atMs: number) => Promise<void>;
  vapid: VapidKey | null;
  /** A push service said this subscription is gone: it is removed for good. */
  gone: (subscriptionId: string) => Promise<void>;
  /** The first retry waits this long, each next one twice as long (1 s, 2 s, 4 s, 8 s by default). */
  backoffMs?: number;
  fetch?: typeof fetch;
  /** Addresses inside the network and http may be sent to (WEBHOOK_ALLOW_PRIVATE=1, a local runtime). */
  allowPrivate: boolean;
}

/** What a deliverer takes from the worker's settings, the same in every object that delivers. */
export function delivererSettings(config: WorkerSettings): Pick<DelivererOptions, "vapid" | "backoffMs" | "allowPrivate"> {
  return { vapid: config.vapid, backoffMs: config.notifyBackoffMs, allowPrivate: config.notifyAllowPrivate };
}

/** The longest reason an attempt keeps. */
const REASON_MAX = 200;

class RefusedTarget extends Error {}

/** Why an attempt failed, in the runtime's words (its own errors are not the receiver's text), bounded. */
function failureReason(err: unknown): string {
  if (err instanceof RefusedTarget) return err.message;
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) return `no answer within ${SEND_TIMEOUT_MS / 1000} s`;
  return `could not connect: ${err instanceof Error ? err.message : String(err)}`.slice(0, REASON_MAX);
}

/** The deliveries schema, in order (storage/migrations.ts). Append to change it; never edit one that has shipped. */
export const DELIVERY_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    does: "deliveries waiting for their attempt, and the log of attempts (the tables as they stood before versions were kept)",
    up(sql) {
      sql.exec(`CREATE TABLE IF NOT EXISTS deliveries (
        id TEXT PRIMARY KEY, subscription_id TEXT NOT NULL, event TEXT NOT NULL, event_id TEXT NOT NULL, machine TEXT,
        payload TEXT NOT NULL, target TEXT NOT NULL, attempts INTEGER NOT NULL, next_at INTEGER NOT NULL
      )`);
      sql.exec(`CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_at)`);
      sql.exec(`CREATE TABLE IF NOT EXISTS delivery_attempts (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, delivery_id TEXT NOT NULL, subscription_id TEXT NOT NULL, event TEXT NOT NULL,
        event_id TEXT NOT NULL, machine TEXT, attempt INTEGER NOT NULL, at_ms INTEGER NOT NULL, outcome TEXT NOT NULL,
        http_status INTEGER, error TEXT
      )`);
    },
  },
];

export class Deliverer implements Timed {
  private readonly sql: SqlStorage;

  constructor(
    storage: DurableObjectStorage,
    private readonly options: DelivererOptions,
  ) {
    migrate(storage, "deliveries", DELIVERY_MIGRATIONS);
    this.sql = storage.sql;
  }

  /** One delivery per subscription, each with the payload as that subscription should read it. Sent from the alarm. */
  async enqueue(deliveries: { target: SubscriptionTarget; payload: NotificationPayload }[]): Promise<void> {
    if (deliveries.length === 0) return;
    const now = Date.now();
    for (const { target, payload } of deliveries) {
      this.sql.exec(
        `INSERT INTO deliveries (id, subscription_id, event, event_id, machine, payload, target, attempts, next_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)`,
        crypto.randomUUID(),
        target.id,
        payload.event,
        payload.id,
        payload.machine || null,
        JSON.stringify(payload),
        JSON.stringify(target),
        now,
      );
    }
    await this.options.wake(now);
  }

  /** Send what is due; answers when the next delivery is due (null: none waits). */
  async run(now = Date.now()): Promise<number | null> {
    const due = rows(this.sql, DeliveryRow, `SELECT * FROM deliveries WHERE next_at <= ? ORDER BY next_at LIMIT ?`, now, PER_RUN);
    await Promise.all(due.map((row) => this.attempt(row)));
    return this.nextDueMs();
  }

  /** The alarm: what is due is sent (each retry waits for its own time). */
  async runDue(nowMs: number): Promise<void> {
    await this.run(nowMs);
  }

  /** When the next delivery is due (null: none waits). */
  nextDueMs(): number | null {
    return oneRow(this.sql, Earliest, `SELECT MIN(next_at) AS at FROM deliveries`).at;
  }

  private async attempt(row: DeliveryRow): Promise<void> {
    const target = row.target;
    const attempt = row.attempts + 1;
    let status: number | null = null;
    let error: string | null = null;
    // Checked again at each attempt: a subscription made before the rule, or while the worker allowed more.
    const refused = refusedTarget(target.url, this.options.allowPrivate);
    try {
      if (refused) throw new RefusedTarget(`the address ${refused}`.slice(0, REASON_MAX));
      const res = await this.send(target, row.payload);
      status = res.status;
      // The receiver's body and status text are never kept or shown: the log says what happened in its own words.
      await res.body?.cancel();
      if (res.status >= 300 && res.status < 400) error = `HTTP ${res.status}: redirects are not followed`;
      else if (!res.ok) error = `HTTP ${res.status}`;
    } catch (err) {
      error = failureReason(err);
    }
    const delivered = status !== null && status >= 200 && status < 300;
    const gone = target.kind === "webpush" && (status === 404 || status === 410);
    const retry = !delivered && !gone && !refused && attempt < MAX_ATTEMPTS && (status === null || status === 429 || status >= 500);
    const outcome = delivered ? "delivered" : gone ? "dropped" : retry ? "retrying" : "failed";
    this.sql.exec(
      `INSERT INTO delivery_attempts (delivery_id, subscription_id, event, event_id, machine, attempt, at_ms, outcome, http_status, error)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.id,
      row.subscription_id,
      row.event,
      row.event_id,
      row.machine,
      attempt,
      Date.now(),
      outcome,
      status,
      error,
    );
    if (retry) {
      const wait = (this.options.backoffMs ?? 1000) * 2 ** (attempt - 1);
      this.sql.exec(`UPDATE deliveries SET attempts = ?, next_at = ? WHERE id = ?`, attempt, Date.now() + wait, row.id);
    } else {
      this.sql.exec(`DELETE FROM deliveries WHERE id = ?`, row.id);
    }
    if (gone) {
      this.sql.exec(`DELETE FROM deliveries WHERE subscription_id = ?`, row.subscription_id);
      await this.options.gone(row.subscription_id).catch((err: unknown) => console.error(`could not remove subscription ${row.subscription_id}:`, err));
    }
    const kept = oneRow(this.sql, Count, `SELECT COUNT(*) AS n FROM delivery_attempts`).n;
    if (kept > ATTEMPTS_KEPT)
      this.sql.exec(`DELETE FROM delivery_attempts WHERE seq IN (SELECT seq FROM delivery_attempts ORDER BY seq LIMIT ?)`, kept - ATTEMPTS_KEPT);
  }

  private async send(target: SubscriptionTarget, payload: NotificationPayload): Promise<Response> {
    const doFetch = this.options.fetch ?? fetch;
    const signal = AbortSignal.timeout(SEND_TIMEOUT_MS);
    if (target.kind === "webhook") {
      const body = JSON.stringify(payload);
      return doFetch(target.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "agent-runtime-webhooks",
          "x-agent-runtime-event": payload.event,
          "x-agent-runtime-delivery": payload.id,
          "x-agent-runtime-signature": await signature(target.secret ?? "", body, Math.floor(Date.now() / 1000)),
        },
        body,
        signal,
        redirect: "manual",
      });
    }
    const vapid = this.options.vapid;
    if (!vapid || !target.keys) throw new Error("this deployment has no VAPID key: set VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY");
    const push = PUSH_OPTIONS[payload.event];
    const body = await encryptPayload(
      { p256dh: fromBase64url(target.keys.p256dh), auth: fromBase64url(target.keys.auth) },
      new TextEncoder().encode(JSON.stringify(pushMessage(payload))),
    );
    return doFetch(target.url, {
      method: "POST",
      headers: {
        authorization: await vapidAuthorization(vapid, target.url),
        "content-encoding": "aes128gcm",
        "content-type": "application/octet-stream",
        ttl: String(push.ttl),
        urgency: push.urgency,
        // A newer push about the same session replaces an older one still waiting at the push service.
        ...(payload.session ? { topic: payload.session.id.replace(/[^A-Za-z0-9_-]/g, "").slice(-32) } : {}),
      },
      body,
      signal,
      redirect: "manual",
    });
  }

  /** The newest attempts, of these subscriptions only (null: all of them). */
  list(subscriptions: string[] | null, limit: number): DeliveryAttempt[] {
    return subscriptions === null
      ? rows(this.sql, AttemptRow, `SELECT * FROM delivery_attempts ORDER BY seq DESC LIMIT ?`, limit)
      : rows(
          this.sql,
          AttemptRow,
          `SELECT * FROM delivery_attempts WHERE subscription_id IN (SELECT value FROM json_each(?)) ORDER BY seq DESC LIMIT ?`,
          JSON.stringify(subscriptions),
          limit,
        );
  }
}

/** An attempt's row, read as the API answers it. */
const AttemptRow = z
  .object({
    delivery_id: z.string(),
    subscription_id: z.string(),
    event: EventType,
    event_id: z.string(),
    machine: z.string().nullable(),
    attempt: z.number(),
    at_ms: z.number(),
    outcome: DeliveryAttempt.shape.outcome,
    http_status: z.number().nullable(),
    error: z.string().nullable(),
  })
  .transform(
    (r): DeliveryAttempt => ({
      deliveryId: r.delivery_id,
      subscriptionId: r.subscription_id,
      event: r.event,
      eventId: r.event_id,
      machine: r.machine,
      attempt: r.attempt,
      atMs: r.at_ms,
      outcome: r.outcome,
      httpStatus: r.http_status,
      error: r.error,
    }),
  );

/** What a phone shows: a title, a line, and where a tap goes (the session, at its question). Small: push payloads are capped near 4 KB. */
export function pushMessage(payload: NotificationPayload): { title: string; body: string; url: string; event: EventType; tag: string } {
  const who = payload.agent ? `${payload.agent} on ${payload.machine}` : payload.machine;
  const titles: Record<EventType, string> = {
    "permission.requested": `${who} needs you`,
    "elicitation.requested": `${who} needs you`,
    "agent.login": `${who} needs a login`,
    "turn.finished": `${who} finished`,
    "turn.failed": `${who} failed`,
    "sandbox.blocked": `${who}: sandbox refused ${payload.sandbox?.target ?? "something"}`,
    "machine.offline": `${payload.machine} went offline`,
    "machine.online": `${payload.machine} is back`,
    test: "agent-runtime",
  };
  const title = titles[payload.event];
  const body =
    payload.permission?.title ??
    payload.question?.title ??
    payload.turn?.lastLine ??
    payload.session?.title ??
    (payload.event === "test" ? "Notifications reach this device." : payload.event.startsWith("machine.") ? "" : payload.text);
  return { title, body: (body ?? "").slice(0, 300), url: payload.url, event: payload.event, tag: payload.session?.id ?? `machine-${payload.machine}` };
}
