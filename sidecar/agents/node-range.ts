/**
 * Whether a version satisfies a range of the forms packages write: a package's `engines.node` (`>=22`,
 * `>=20.19.0 <21 || >=22.12`, `^22`, `22.x`) or an adapter's dependency on its agent (`^0.166.0`). A range
 * this does not understand is taken as satisfied: npm itself only warns on engines, and the agent then
 * says for itself what it lacks.
 */
type Version = [number, number, number];

function parse(text: string): Version | null {
  const m = /^v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?/.exec(text.trim());
  if (!m) return null;
  const n = (part: string | undefined) => (part === undefined || part === "x" || part === "*" ? 0 : Number(part));
  return [Number(m[1]), n(m[2]), n(m[3])];
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

function satisfiesComparator(version: Version, comparator: string): boolean | null {
  const m = /^(>=|<=|>|<|=|\^|~)?\s*(\S+)$/.exec(comparator);
  if (!m) return null;
  if (m[2] === "*" || m[2] === "x") return true;
  const bound = parse(m[2]!);
  if (!bound) return null;
  const c = compare(version, bound);
  switch (m[1]) {
    case ">=":
      return c >= 0;
    case ">":
      return c > 0;
    case "<=":
      return c <= 0;
    case "<":
      return c < 0;
    case "^":
      // As npm reads it: the left-most non-zero part is fixed (^0.166.0 is 0.166.x, ^0.0.3 only 0.0.3).
      if (bound[0] !== 0) return c >= 0 && version[0] === bound[0];
      if (bound[1] !== 0) return c >= 0 && version[0] === 0 && version[1] === bound[1];
      return c === 0;
    case "~":
      return c >= 0 && version[0] === bound[0] && version[1] === bound[1];
    default: {
      // A bare version: `22` or `22.x` is that major, `22.12` that minor, `22.12.0` exactly.
      const parts = m[2]!
        .replace(/^v/, "")
        .split(".")
        .filter((p) => p !== "x" && p !== "*").length;
      return version.slice(0, parts).every((v, i) => v === bound[i]);
    }
  }
}

export function satisfiesRange(versionText: string, range: string | undefined): boolean {
  const version = parse(versionText);
  if (!range || !version) return true;
  const verdicts = range.split("||").map((clause) => {
    const comparators = clause
      .trim()
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, "$1")
      .split(/\s+/)
      .filter(Boolean);
    const each = comparators.map((c) => satisfiesComparator(version, c));
    return each.includes(null) ? null : each.every(Boolean);
  });
  if (verdicts.includes(null)) return true;
  return verdicts.some(Boolean);
}
