/**
 * An apply of a team document (skills, MCP servers) on this machine: one at a time, in the order asked
 * for, and the last one remembered so that a newly installed agent can be given it too (`reapply`).
 */
export class SerialApply<A, R> {
  private queue: Promise<unknown> = Promise.resolve();
  private last: A | null = null;

  constructor(private readonly applyNow: (args: A, force: boolean) => Promise<R>) {}

  apply(args: A, opts: { force?: boolean } = {}): Promise<R> {
    this.last = args;
    const run = this.queue.catch(() => undefined).then(() => this.applyNow(args, opts.force ?? false));
    this.queue = run;
    return run;
  }

  async reapply(): Promise<void> {
    if (this.last) await this.apply(this.last, { force: true });
  }
}
