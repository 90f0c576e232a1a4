/**
 * What the machine said of its sandbox in its last hello (docs/architecture.md, "Sandboxes: the team's
 * rules"): what it can enforce and its owner's floor. Kept in the object's storage, not on the socket (an
 * allowlist can outgrow a socket's attachment), and read back through its schema. The worker uses the floor
 * only to say what a session's sandbox will be; the sidecar enforces it whatever the worker says.
 */
import { MachineSandbox, type SandboxSpec } from "@agent-runtime/protocol/sandbox";
import type { HelloFrame, MachineFeature } from "../machine/feature";

const KEY = "machine-sandbox";

export class MachineFloor implements MachineFeature {
  private known: MachineSandbox | null | undefined;

  constructor(private readonly storage: DurableObjectStorage) {}

  /** Each hello's word, kept before any task or restore starts an agent. */
  hello(frame: HelloFrame): void {
    this.keep(frame.sandbox ?? null);
  }

  /** The hello's word (null: a sidecar that says nothing of sandboxes; its floor is then unknown). */
  keep(said: MachineSandbox | null): void {
    this.known = said;
    if (said) this.storage.kv.put(KEY, said);
    else this.storage.kv.delete(KEY);
  }

  said(): MachineSandbox | null {
    if (this.known === undefined) {
      const parsed = MachineSandbox.safeParse(this.storage.kv.get(KEY));
      this.known = parsed.success ? parsed.data : null;
    }
    return this.known;
  }

  floor(): SandboxSpec | null {
    return this.said()?.floor ?? null;
  }
}
