/**
 * When a sidecar dials the worker again (docs/architecture.md, "What a sidecar does when the worker refuses
 * it"): the one rule both the sidecar's tunnel (tunnel.ts) and the bench's simulated sidecars
 * (bench/scale-sim.ts) follow, so that a storm measured in the bench is the storm the product makes.
 */

/** The longest blind wait between two dials, before its jitter. */
export const MAX_BACKOFF_MS = 5_000;
/** The longest `Retry-After` honoured: a worker asking for more is redialed after this (its calls' grace is shorter). */
export const MAX_RETRY_AFTER_MS = 60_000;
/** Close codes of a worker that went away (a deploy, a restart, a dropped connection) rather than one that refused us. */
const GOING_AWAY_CODES = new Set([1001, 1006, 1011, 1012]);

/**
 * How long to wait before redialing after the `attempt`-th failure in a row (0: the connection just
 * dropped with `code`). Exponential backoff with ±25 % jitter, capped: a flapping network, or a worker
 * that is not there yet, is not hammered. When the worker went away (a deploy ends every socket at once),
 * the first redial is spread over `spreadMs` so that thousands of machines do not all come back in the
 * same instant. The cap is short (5 s) because a worker under load says how long to wait (`Retry-After`,
 * below): the blind backoff only covers a worker that is not answering at all, and a long cap there is
 * what made a storm last: the last sidecars slept up to 12.5 s after the worker was back.
 */
export function redialDelayMs(attempt: number, code: number, spreadMs: number, random: () => number = Math.random): number {
  if (attempt === 0 && GOING_AWAY_CODES.has(code)) return random() * spreadMs;
  return Math.min(MAX_BACKOFF_MS, 250 * 2 ** attempt) * (0.75 + random() * 0.5);
}

/**
 * A `Retry-After` header (RFC 9110 §10.2.3: delay-seconds or an HTTP-date) as milliseconds from `nowMs`,
 * at most MAX_RETRY_AFTER_MS; null when absent or unreadable (the backoff decides alone).
 */
export function retryAfterMs(value: string | null | undefined, nowMs = Date.now()): number | null {
  if (value === null || value === undefined) return null;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    // An HTTP-date starts with its day's name (all three forms RFC 9110 accepts); Date.parse alone would take "1.5" for a date.
    const at = /^[A-Za-z]{3}/.test(text) ? Date.parse(text) : Number.NaN;
    if (Number.isNaN(at)) return null;
    ms = at - nowMs;
  }
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}

/** One tunnel's redials: failures in a row since the last welcome, and what the worker last asked. */
export class Redial {
  private failures = 0;
  private asked: number | null = null;

  constructor(
    private readonly spreadMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** Dials since the last welcome. */
  get attempts(): number {
    return this.failures;
  }

  /**
   * The worker refused the dial with a status (429, 503 under load) and perhaps said when to come back:
   * the next delay honours it.
   */
  refused(retryAfter: number | null): void {
    this.asked = retryAfter;
  }

  /**
   * The connection closed (or the dial failed) with `code`: how long to wait before dialing again. A
   * worker's `Retry-After` is honoured: never sooner than it asked (nor than the backoff), and spread
   * over the window after it, since every sidecar it refused at once was told the same.
   */
  next(code: number): number {
    const backoff = redialDelayMs(this.failures, code, this.spreadMs, this.random);
    this.failures++;
    const asked = this.asked;
    this.asked = null;
    return asked === null ? backoff : Math.max(asked, backoff) + this.random() * this.spreadMs;
  }

  /** The worker welcomed the tunnel: the next drop starts afresh. */
  connected(): void {
    this.failures = 0;
    this.asked = null;
  }
}
