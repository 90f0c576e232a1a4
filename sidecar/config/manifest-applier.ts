/**
 * A team document applied to the agents installed here, with a manifest of what it wrote (skills, MCP
 * servers): one apply at a time (SerialApply); the same document applied again to the same targets does
 * nothing and answers what it did the first time; otherwise the document's own work runs, and its result
 * is recorded in the manifest before anyone is told it was applied.
 */
import { type Applied, appliedAlready, type ManifestFile } from "./manifest-file";
import { SerialApply } from "./serial-apply";

export abstract class ManifestApplier<A extends { version: string; config: unknown }, R extends object, M extends { applied?: Applied<R> }, T> {
  private readonly serial = new SerialApply<A, R>((args, force) => this.applyNow(args, force));

  protected constructor(
    protected readonly manifest: ManifestFile<M>,
    /** Where the document goes: the agents installed here, as this kind of document reaches them. */
    private readonly targets: () => Promise<T[]>,
  ) {}

  /** One apply at a time, in the order they were asked for; `force` applies even an unchanged document. */
  apply(args: A, opts: { force?: boolean } = {}): Promise<R> {
    return this.serial.apply(args, opts);
  }

  /** After an agent was installed, give it the document too. */
  reapply(): Promise<void> {
    return this.serial.reapply();
  }

  /** The document's own work, for targets whose fingerprint changed; `manifest` is saved with its result after. */
  protected abstract applyChanged(args: A, targets: T[], manifest: M): Promise<R>;

  /** Told once the result is recorded (to log it). */
  protected abstract applied(result: R, targets: T[]): void;

  /** Told when the document was applied already and nothing ran. */
  protected unchanged(_version: string): void {}

  private async applyNow(args: A, force: boolean): Promise<R> {
    const targets = await this.targets();
    const fingerprint = JSON.stringify({ config: args.config, targets });
    const manifest = await this.manifest.read();
    const already = appliedAlready(manifest.applied, args.version, fingerprint, force);
    if (already) {
      this.unchanged(args.version);
      return already;
    }
    const result = await this.applyChanged(args, targets, manifest);
    manifest.applied = { version: args.version, fingerprint, result };
    await this.manifest.write(manifest);
    this.applied(result, targets);
    return result;
  }
}
