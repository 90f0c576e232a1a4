/**
 * The policy's command patterns and path globs, matched without a backtracking engine (docs/architecture.md,
 * "The permission policy", "Matching in linear time"). A policy is written by people the machine's agent does
 * not trust alike (a viewer's draft in the tester, a member's session policy) and matched against text the
 * agent chooses, so no pattern may cost more than its length times the input's:
 * - a command pattern (`*` is the only wildcard) is its pieces between stars found left to right, each the
 *   leftmost occurrence after the one before (Knuth-Morris-Pratt): O(pattern + input);
 * - a path glob is compiled to a small automaton whose states are all followed at once, one input character at
 *   a time (Thompson's construction): O(pattern × input), whatever the glob.
 */

/**
 * Work a whole evaluation may do, in steps (a character scanned; a glob's state followed on one character is
 * STATE_COST of them). Linear
 * matching bounds one pattern; this bounds a policy of thousands of patterns against 64 long paths. Past it,
 * `spend` throws WorkExhausted and the evaluator judges the rule the stricter way (policy-eval.ts).
 */
export class WorkBudget {
  constructor(public left: number) {}
  spend(steps: number): void {
    this.left -= steps;
    if (this.left < 0) throw new WorkExhausted();
  }
}

export class WorkExhausted extends Error {
  constructor() {
    super("the policy's matching took more work than one request may");
  }
}

/** A glob's state followed costs about four characters scanned (measured: bench/policy.ts). */
const STATE_COST = 4;

/** A budget that never runs out (a single pattern's own tests). */
const UNBOUNDED = new WorkBudget(Number.POSITIVE_INFINITY);

/** The leftmost occurrence of `needle` in `text[from, to)`, or -1; O(needle + scanned) whatever the text. */
function indexOfLinear(text: string, needle: string, from: number, to: number): number {
  if (needle.length === 0) return from;
  const fail = new Int32Array(needle.length);
  for (let i = 1, k = 0; i < needle.length; i++) {
    while (k > 0 && needle[i] !== needle[k]) k = fail[k - 1]!;
    if (needle[i] === needle[k]) k++;
    fail[i] = k;
  }
  for (let i = from, k = 0; i < to; i++) {
    while (k > 0 && text[i] !== needle[k]) k = fail[k - 1]!;
    if (text[i] === needle[k]) k++;
    if (k === needle.length) return i - needle.length + 1;
  }
  return -1;
}

/** A command pattern: `*` matches any characters (newlines too); everything else is itself. */
export function compileCommandPattern(pattern: string): (text: string, budget?: WorkBudget) => boolean {
  const pieces = pattern.trim().split("*");
  if (pieces.length === 1) return (text) => text === pieces[0];
  const first = pieces[0]!;
  const last = pieces.at(-1)!;
  const middle = pieces.slice(1, -1).filter((p) => p.length > 0);
  return (text, budget = UNBOUNDED) => {
    budget.spend(1 + first.length + last.length);
    if (text.length < first.length + last.length || !text.startsWith(first) || !text.endsWith(last)) return false;
    let at = first.length;
    const end = text.length - last.length;
    for (const piece of middle) {
      const found = indexOfLinear(text, piece, at, end);
      budget.spend(piece.length + (found < 0 ? end : found + piece.length) - at);
      if (found < 0) return false;
      at = found + piece.length;
    }
    return true;
  };
}

// The automaton's instructions. CHAR, ANY (not `/`), ALL (anything), CLASS consume one character.
const CHAR = 0;
const ANY = 1;
const ALL = 2;
const CLASS = 3;
const SPLIT = 4;
const JMP = 5;
const MATCH = 6;

interface Op {
  op: number;
  /** CHAR: the character; CLASS: its ranges as pairs of code units. */
  c?: string;
  ranges?: number[];
  negated?: boolean;
  /** SPLIT: both ways on; JMP: where. */
  x?: number;
  y?: number;
}

/**
 * Glob syntax (picomatch's, without extglobs): `*` any characters but `/`; `**` as a whole segment any number
 * of segments (`a/**` also matches `a`); `?` one character but `/`; `[a-z]`, `[!x]` or `[^x]` one of (never
 * `/`); `{a,b}` either (nesting allowed); `\` makes the next character itself. Dotfiles are matched like any
 * other name. Extglobs (`!(x)`, `@(a|b)`) are not supported: their characters are themselves.
 */
class GlobCompiler {
  readonly prog: Op[] = [];
  private i = 0;
  constructor(private readonly src: string) {}

  compile(): Op[] {
    this.alternatives(false);
    this.prog.push({ op: MATCH });
    return this.prog;
  }

  private emit(op: Op): number {
    this.prog.push(op);
    return this.prog.length - 1;
  }

  /** Branches separated by `,` (inside braces) up to `}` or the end: SPLIT chains jumping to a common end. */
  private alternatives(inBraces: boolean): void {
    const jumps: number[] = [];
    for (;;) {
      const split = inBraces ? this.emit({ op: SPLIT }) : -1;
      if (split >= 0) this.prog[split]!.x = this.prog.length;
      this.sequence(inBraces);
      if (!inBraces) return;
      const more = this.src[this.i] === ",";
      if (more) {
        jumps.push(this.emit({ op: JMP }));
        this.i++;
        this.prog[split]!.y = this.prog.length;
        continue;
      }
      // The last branch: its SPLIT's other way is never taken alone.
      this.prog[split]!.y = this.prog[split]!.x;
      if (this.src[this.i] === "}") this.i++;
      break;
    }
    for (const j of jumps) this.prog[j]!.x = this.prog.length;
  }

  private atSegmentEnd(at: number, inBraces: boolean): boolean {
    const c = this.src[at];
    return c === undefined || c === "/" || (inBraces && (c === "," || c === "}"));
  }

  private sequence(inBraces: boolean): void {
    const s = this.src;
    while (this.i < s.length) {
      const c = s[this.i]!;
      if (inBraces && (c === "," || c === "}")) return;
      const segmentStart = this.i === 0 || s[this.i - 1] === "/";
      if (c === "/" && s.startsWith("**", this.i + 1) && this.atSegmentEnd(this.i + 3, inBraces) && s[this.i + 3] !== "/") {
        // `/**` at the end: nothing more, or `/` and anything.
        const split = this.emit({ op: SPLIT, x: this.prog.length + 1 });
        this.emit({ op: CHAR, c: "/" });
        this.star(ALL);
        this.prog[split]!.y = this.prog.length;
        this.i += 3;
      } else if (c === "*" && s[this.i + 1] === "*" && segmentStart && this.atSegmentEnd(this.i + 2, inBraces)) {
        if (s[this.i + 2] === "/") {
          // `**/`: no segment, or any segments each ending in `/`.
          const split = this.emit({ op: SPLIT, x: this.prog.length + 1 });
          this.star(ALL);
          this.emit({ op: CHAR, c: "/" });
          this.prog[split]!.y = this.prog.length;
          this.i += 3;
        } else {
          this.star(ALL);
          this.i += 2;
        }
      } else if (c === "*") {
        while (s[this.i] === "*") this.i++;
        this.star(ANY);
      } else if (c === "?") {
        this.emit({ op: ANY });
        this.i++;
      } else if (c === "[" && this.charClass()) {
        // consumed by charClass
      } else if (c === "{" && this.hasClosingBrace()) {
        this.i++;
        this.alternatives(true);
      } else if (c === "\\" && this.i + 1 < s.length) {
        this.emit({ op: CHAR, c: s[this.i + 1]! });
        this.i += 2;
      } else {
        this.emit({ op: CHAR, c });
        this.i++;
      }
    }
  }

  /** `L: SPLIT L+1, out; L+1: <one>; JMP L`: zero or more of one kind of character. */
  private star(one: typeof ANY | typeof ALL): void {
    const loop = this.emit({ op: SPLIT });
    this.emit({ op: one });
    this.emit({ op: JMP, x: loop });
    this.prog[loop]!.x = loop + 1;
    this.prog[loop]!.y = this.prog.length;
  }

  /** A `{` is a group only when a `,` at its own depth and its `}` follow; else it is itself. */
  private hasClosingBrace(): boolean {
    let depth = 0;
    let comma = false;
    for (let j = this.i; j < this.src.length; j++) {
      const c = this.src[j];
      if (c === "\\") j++;
      else if (c === "{") depth++;
      else if (c === "," && depth === 1) comma = true;
      else if (c === "}" && --depth === 0) return comma;
    }
    return false;
  }

  private charClass(): boolean {
    const s = this.src;
    let j = this.i + 1;
    const negated = s[j] === "!" || s[j] === "^";
    if (negated) j++;
    const ranges: number[] = [];
    let first = true;
    for (; j < s.length; j++) {
      let c = s[j]!;
      if (c === "]" && !first) {
        this.emit({ op: CLASS, ranges, negated });
        this.i = j + 1;
        return true;
      }
      first = false;
      if (c === "\\" && j + 1 < s.length) c = s[++j]!;
      if (s[j + 1] === "-" && j + 2 < s.length && s[j + 2] !== "]") {
        ranges.push(c.charCodeAt(0), s[j + 2]!.charCodeAt(0));
        j += 2;
      } else ranges.push(c.charCodeAt(0), c.charCodeAt(0));
    }
    return false;
  }
}

/** The program as flat arrays, so that following every state costs a few reads each, not an object's. */
interface Flat {
  op: Int32Array;
  /** CHAR: the code unit; SPLIT, JMP: the first way. */
  a: Int32Array;
  /** SPLIT: the second way; CLASS: 1 when negated. */
  b: Int32Array;
  ranges: (number[] | undefined)[];
}

function flatten(prog: Op[]): Flat {
  const n = prog.length;
  const flat: Flat = { op: new Int32Array(n), a: new Int32Array(n), b: new Int32Array(n), ranges: [] };
  prog.forEach((o, k) => {
    flat.op[k] = o.op;
    flat.a[k] = o.op === CHAR ? o.c!.charCodeAt(0) : (o.x ?? 0);
    flat.b[k] = o.op === CLASS ? (o.negated ? 1 : 0) : (o.y ?? 0);
    flat.ranges[k] = o.ranges;
  });
  return flat;
}

const SLASH = 47;

function consumes(f: Flat, at: number, code: number): boolean {
  switch (f.op[at]) {
    case CHAR:
      return f.a[at] === code;
    case ANY:
      return code !== SLASH;
    case ALL:
      return true;
    case CLASS: {
      if (code === SLASH) return false;
      const r = f.ranges[at]!;
      let inside = false;
      for (let k = 0; k < r.length && !inside; k += 2) inside = code >= r[k]! && code <= r[k + 1]!;
      return inside !== (f.b[at] === 1);
    }
    default:
      return false;
  }
}

/** A path glob as a test; see GlobCompiler for the syntax. Every state is followed at once: no backtracking. */
export function compileGlob(glob: string): (path: string, budget?: WorkBudget) => boolean {
  const f = flatten(new GlobCompiler(glob).compile());
  const n = f.op.length;
  return (path, budget = UNBOUNDED) => {
    // Two state lists and a mark per instruction saying which step last reached it.
    let current = new Int32Array(n);
    let next = new Int32Array(n);
    const mark = new Int32Array(n).fill(-1);
    const stack = new Int32Array(2 * n + 1);
    let step = 0;
    let work = 0;
    // Adds an instruction and all it reaches without consuming; each instruction is expanded once a step, so a
    // step costs O(n) whatever the glob (a list of reachable states per instruction would cost O(n²)).
    const addAll = (list: Int32Array, count: number, pc: number): number => {
      let top = 0;
      stack[top++] = pc;
      while (top > 0) {
        const at = stack[--top]!;
        if (mark[at] === step) continue;
        mark[at] = step;
        work++;
        const op = f.op[at];
        if (op === JMP) stack[top++] = f.a[at]!;
        else if (op === SPLIT) {
          stack[top++] = f.b[at]!;
          stack[top++] = f.a[at]!;
        } else list[count++] = at;
      }
      return count;
    };
    let count = addAll(current, 0, 0);
    for (let k = 0; k < path.length && count > 0; k++) {
      const code = path.charCodeAt(k);
      step++;
      let nextCount = 0;
      for (let s = 0; s < count; s++) {
        const at = current[s]!;
        if (consumes(f, at, code)) nextCount = addAll(next, nextCount, at + 1);
      }
      budget.spend(STATE_COST * (count + work));
      work = 0;
      [current, next] = [next, current];
      count = nextCount;
    }
    for (let s = 0; s < count; s++) if (f.op[current[s]!] === MATCH) return true;
    return false;
  };
}

/**
 * Compiled patterns, shared by every evaluation: the machine's object judges every request against the same
 * policies, so each pattern is compiled once. Compiling is linear in the pattern (like parsing the body that
 * brought it) and is not counted against a budget, which stays a count of matching alone, the same on every
 * run. Bounded: emptied when full.
 */
const CACHE_ENTRIES = 4096;
const commandCache = new Map<string, (text: string, budget?: WorkBudget) => boolean>();
const globCache = new Map<string, (path: string, budget?: WorkBudget) => boolean>();

function cached<T>(cache: Map<string, T>, key: string, make: (key: string) => T): T {
  let value = cache.get(key);
  if (value === undefined) {
    if (cache.size >= CACHE_ENTRIES) cache.clear();
    value = make(key);
    cache.set(key, value);
  }
  return value;
}

export const commandPatternTest = (pattern: string) => cached(commandCache, pattern, compileCommandPattern);
export const globTest = (glob: string) => cached(globCache, glob, compileGlob);
