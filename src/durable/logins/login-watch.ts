/**
 * Terminal logins the machine's object waits for (docs/architecture.md, "Logins"): a subscription of its
 * own to the login process's output, `login:<agent>:<processId>`, whose end says how the process exited.
 * Kept in the object's storage (and named after what it is for), so it is found again after the object
 * slept and re-subscribed at every hello, like the session recorder's.
 */
import type { WorkerFrame } from "@agent-runtime/protocol/frames";
import { jsonAs } from "@agent-runtime/protocol/json";
import { ProcessLogEnd } from "@agent-runtime/protocol/processes";
import type { Subscriber, SubscriberKind } from "../streams/subscribers";

const PREFIX = "login:";
const KEY = "login-watch:";

export class LoginWatch implements SubscriberKind {
  constructor(
    private readonly storage: DurableObjectStorage,
    /** A login process ended: exit 0 is a login. */
    private readonly ended: (agent: string, ok: boolean) => void,
  ) {}

  /** Wait for this login process to end; the `sub` frame to send. */
  watch(agent: string, processId: string): WorkerFrame {
    this.storage.kv.put(`${KEY}${agent}:${processId}`, true);
    return this.subscriber(agent, processId).subscribeFrame();
  }

  find(sub: string): Subscriber | null {
    if (!sub.startsWith(PREFIX)) return null;
    const rest = sub.slice(PREFIX.length);
    const cut = rest.indexOf(":");
    return cut > 0 ? this.subscriber(rest.slice(0, cut), rest.slice(cut + 1)) : null;
  }

  all(): Subscriber[] {
    const found: Subscriber[] = [];
    for (const [key] of this.storage.kv.list({ prefix: KEY })) {
      const subscriber = this.find(`${PREFIX}${key.slice(KEY.length)}`);
      if (subscriber) found.push(subscriber);
    }
    return found;
  }

  private subscriber(agent: string, processId: string): Subscriber {
    const sub = `${PREFIX}${agent}:${processId}`;
    const forget = () => this.storage.kv.delete(`${KEY}${agent}:${processId}`);
    return {
      sub,
      subscribeFrame: () => ({ t: "sub", sub, stream: { kind: "logs", processId }, after: 0, recorder: true, packed: true }),
      // What the person typed and saw is theirs (the terminal shows it); only the end matters here.
      deliver: () => {},
      end: (end) => {
        forget();
        const parsed = jsonAs(end.json, ProcessLogEnd);
        this.ended(agent, end.code === "exited" && parsed !== undefined && "exitCode" in parsed && parsed.exitCode === 0);
      },
      // The machine restarted or stayed away: the process is gone with it.
      fail: () => forget(),
    };
  }
}
