/**
 * Which of the machine's ports its owner lets the hosted URL open (`--expose-ports 3000-3999,5173`,
 * AGENT_RUNTIME_EXPOSE_PORTS). The sidecar alone decides: a preview of any other port is refused here,
 * whatever the worker asks, and nothing the hosted side sends can widen the list.
 */
export class ExposedPorts {
  private constructor(
    readonly spec: string,
    private readonly ranges: readonly (readonly [number, number])[],
  ) {}

  /** No port: the default, until the owner names some. */
  static readonly NONE = new ExposedPorts("", []);

  /** The list as the owner wrote it: ports and ranges, comma separated; a clear error for anything else. */
  static parse(spec: string): ExposedPorts {
    const ranges: [number, number][] = [];
    for (const part of spec.split(",").map((p) => p.trim())) {
      if (!part) continue;
      const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(part);
      const from = Number(match?.[1]);
      const to = match?.[2] === undefined ? from : Number(match[2]);
      if (!match || !validPort(from) || !validPort(to) || to < from)
        throw new Error(`'${part}' is not a port or a range of ports (e.g. 5173 or 3000-3999, each 1-65535)`);
      ranges.push([from, to]);
    }
    return new ExposedPorts(ranges.map(([from, to]) => (from === to ? `${from}` : `${from}-${to}`)).join(","), ranges);
  }

  allows(port: number): boolean {
    return this.ranges.some(([from, to]) => port >= from && port <= to);
  }

  /** What a refused preview is told: how the machine's owner would allow it. */
  refusal(port: number): string {
    const now = this.spec ? `it exposes ${this.spec}` : "it exposes no port";
    return `port ${port} is not exposed on this machine (${now}); its owner allows it by restarting the sidecar with --expose-ports ${port} (or AGENT_RUNTIME_EXPOSE_PORTS=${port})`;
  }
}

function validPort(port: number): boolean {
  return Number.isInteger(port) && port >= 1 && port <= 65_535;
}
