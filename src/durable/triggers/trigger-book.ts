/**
 * GitHub triggers in the team's object (docs/architecture.md, "GitHub triggers"). A delivery is checked
 * before anything else is read of it: its `X-Hub-Signature-256` against the trigger's secret
 * (WebCrypto's HMAC verify, constant time), then its delivery id and the digest of its body against those
 * seen within the window (a replay, under its own id or another, is ignored: the id is not signed, the body
 * is). Only then is its event matched, its author checked (a comment from outside the trigger's people is
 * refused) and its prompt template filled; the task starts on its machine and will say on the issue how it
 * ended.
 */
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import {
  DELIVERIES_REMEMBERED,
  DELIVERY_WINDOW_MS,
  type DeliveryOutcome,
  GithubEvent,
  type IssueRef,
  MAX_TRIGGERS,
  MAX_TRIGGERS_PER_MACHINE,
  type Trigger,
  Trigger as TriggerSchema,
  TriggerAuthors,
  type TriggerRequest,
} from "@agent-runtime/protocol/triggers";
import { ScheduleTask } from "@agent-runtime/protocol/schedules";
import { z } from "zod";
import { randomHex16 } from "../../lib/ids";
import { type Commenter, deliveryContext, fillTemplate } from "./github-events";
import { firstRow, writeRow } from "../storage/stored";
import { RecordTable } from "../storage/record-table";
import { noRoom } from "../storage/room";

const Row = z.object({
  id: z.string(),
  secret: z.string(),
  events: z.string(),
  /** Who may fire its comment events (TriggerAuthors); null for a trigger made before there was a choice: the default. */
  authors: z.string().nullable(),
  task: z.string(),
  created_by: z.string(),
  created_at: z.number(),
  last_delivery: z.string().nullable(),
});
type Row = z.output<typeof Row>;
const SeenDelivery = z.object({ delivery_id: z.string() });

export interface TriggerHost {
  /** Start the task a delivery asks for on its machine (or the trigger's attempt group); its id, or why not. */
  start(task: z.output<typeof ScheduleTask>, who: string, report: IssueRef, trigger: string): Promise<Outcome<{ id: string }>>;
}

/** A delivery as the route hands it over: the headers that matter and the raw body (the signature covers its bytes). */
export interface Delivery {
  event: string;
  delivery: string;
  signature: string;
  body: string;
}

const Events = z.array(GithubEvent);
const encoder = new TextEncoder();

/** The team's GitHub triggers: listed and read as its other records are (record-table.ts). */
export class TriggerBook extends RecordTable<typeof Row, Trigger> {
  constructor(
    sql: SqlStorage,
    private readonly host: TriggerHost,
  ) {
    super(sql, "triggers", Row, toTrigger);
  }

  create(request: TriggerRequest, who: string, now = Date.now()): Outcome<Trigger> {
    const full = noRoom(this.sql, "triggers", "json_extract(task, '$.machine')", request.task.machine, {
      perMachine: MAX_TRIGGERS_PER_MACHINE,
      team: MAX_TRIGGERS,
    });
    if (full) return full;
    const row: Row = {
      id: `trg-${randomHex16()}`,
      secret: request.secret,
      events: JSON.stringify(request.events),
      authors: JSON.stringify(request.authors),
      task: JSON.stringify(request.task),
      created_by: who,
      created_at: now,
      last_delivery: null,
    };
    writeRow(this.sql, "triggers", row, "insert");
    return { ok: true, value: toTrigger(row) };
  }

  /** The trigger and the deliveries it remembers. */
  override delete(id: string): boolean {
    this.sql.exec(`DELETE FROM trigger_deliveries WHERE trigger_id = ?`, id);
    return super.delete(id);
  }

  /** A delivery: null when it is not the trigger's (no such trigger, or its signature does not match); else what it did. */
  async deliver(id: string, delivery: Delivery, now = Date.now()): Promise<DeliveryOutcome | null> {
    const row = this.row(id);
    if (!row || !(await signatureMatches(row.secret, delivery.signature, delivery.body))) return null;
    // The delivery id is not signed: a captured body sent again under a new id is the same delivery.
    const digest = await sha256Hex(delivery.body);
    const since = now - DELIVERY_WINDOW_MS;
    const seen = firstRow(
      this.sql,
      SeenDelivery,
      `SELECT delivery_id FROM trigger_deliveries WHERE trigger_id = ? AND at_ms >= ? AND (delivery_id = ? OR body_sha256 = ?) LIMIT 1`,
      id,
      since,
      delivery.delivery,
      digest,
    );
    if (seen) {
      const detail =
        seen.delivery_id === delivery.delivery
          ? `delivery ${delivery.delivery} was handled already`
          : `this body was delivered already (delivery ${seen.delivery_id}): a replay under another id`;
      return { outcome: "replayed", detail, task: null };
    }
    writeRow(this.sql, "trigger_deliveries", { trigger_id: id, delivery_id: delivery.delivery, at_ms: now, body_sha256: digest });
    this.sql.exec(`DELETE FROM trigger_deliveries WHERE trigger_id = ? AND at_ms < ?`, id, since);
    this.sql.exec(
      `DELETE FROM trigger_deliveries WHERE trigger_id = ? AND delivery_id NOT IN (SELECT delivery_id FROM trigger_deliveries WHERE trigger_id = ? ORDER BY at_ms DESC LIMIT ?)`,
      id,
      id,
      DELIVERIES_REMEMBERED,
    );
    const outcome = await this.act(row, delivery, now);
    const last = { atMs: now, delivery: delivery.delivery, outcome: outcome.outcome, task: outcome.task };
    this.sql.exec(`UPDATE triggers SET last_delivery = ? WHERE id = ?`, JSON.stringify(last), id);
    return outcome;
  }

  private async act(row: Row, delivery: Delivery, now: number): Promise<DeliveryOutcome> {
    if (delivery.event === "ping") return { outcome: "ignored", detail: "pong: the webhook reaches this trigger", task: null };
    const events = Events.parse(JSON.parse(row.events));
    let payload: unknown;
    try {
      payload = JSON.parse(delivery.body);
    } catch {
      return { outcome: "ignored", detail: "the body is not JSON (set the webhook's content type to application/json)", task: null };
    }
    const matched = deliveryContext(delivery.event, payload, events);
    if (!matched.ok) return { outcome: "ignored", detail: matched.problem.detail, task: null };
    const commenter = matched.value.commenter;
    if (commenter) {
      const refused = refusal(commenter, authorsOf(row), now);
      if (refused) return refused;
    }
    const task = ScheduleTask.parse(JSON.parse(row.task));
    const prompt = typeof task.prompt === "string" ? fillTemplate(task.prompt, matched.value.fields) : task.prompt;
    const started = await this.host
      .start({ ...task, prompt }, `trigger ${row.id} (${matched.value.fields.author || "github"})`, matched.value.issue, row.id)
      .catch((err: unknown): Outcome<{ id: string }> => ({ ok: false, problem: { code: "internal", detail: String(err) } }));
    if (!started.ok) return { outcome: "failed", detail: started.problem.detail, task: null };
    const what = started.value.id.startsWith("grp-") ? "attempt group" : "task";
    return { outcome: "started", detail: `${what} ${started.value.id} started on ${task.machine}`, task: started.value.id };
  }
}

/** Who may fire a trigger's comment events: as it says, or the repository's people for one made before it could. */
function authorsOf(row: Row): TriggerAuthors {
  return TriggerAuthors.parse(row.authors === null ? {} : JSON.parse(row.authors));
}

/** Why a comment starts nothing: its author is not one the trigger names, or it is older than the window. */
function refusal(commenter: Commenter, authors: TriggerAuthors, now: number): DeliveryOutcome | null {
  const allowed =
    authors.associations.some((a) => a === commenter.association) || authors.logins.some((l) => l.toLowerCase() === commenter.login.toLowerCase());
  if (!allowed) {
    const who = authors.logins.length > 0 ? ` or ${authors.logins.join(", ")}` : "";
    return {
      outcome: "refused",
      detail: `${commenter.login} (${commenter.association}) may not start this trigger's task: it takes comments from ${authors.associations.join(", ") || "no association"}${who}`,
      task: null,
    };
  }
  if (commenter.createdAtMs < now - DELIVERY_WINDOW_MS) {
    return { outcome: "replayed", detail: "this comment is older than the deliveries remembered: a replay", task: null };
  }
  return null;
}

async function sha256Hex(body: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(body)));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** `sha256=<hex>` of the body with the secret, checked by WebCrypto (constant time). */
async function signatureMatches(secret: string, header: string, body: string): Promise<boolean> {
  const hex = /^sha256=([0-9a-f]{64})$/i.exec(header.trim())?.[1];
  if (!hex) return false;
  const mac = new Uint8Array(hex.match(/../g)!.map((b) => Number.parseInt(b, 16)));
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  return crypto.subtle.verify("HMAC", key, mac, encoder.encode(body));
}

function toTrigger(row: Row): Trigger {
  const last = row.last_delivery ? TriggerSchema.shape.lastDelivery.parse(JSON.parse(row.last_delivery)) : null;
  return {
    id: row.id,
    kind: "github",
    events: Events.parse(JSON.parse(row.events)),
    authors: authorsOf(row),
    task: ScheduleTask.parse(JSON.parse(row.task)),
    createdBy: row.created_by,
    createdAtMs: row.created_at,
    deliveryPath: `/v1/triggers/${row.id}/github`,
    lastDelivery: last,
  };
}
