/**
 * Applies the team's skills configuration on this machine: fetches each source (a local folder,
 * a git clone, a GitHub repository), narrows it to `subpath` and the named `skills` (folders with
 * a SKILL.md), and copies them where the agents read skills (e.g. ~/.claude/skills/<name>/).
 *
 * It replaces what an earlier configuration put there and nothing else: what it installed is
 * recorded in a manifest, and a folder it did not create is never touched. A broken source is
 * reported and skipped; the others still apply. git runs without a shell, with `--` before
 * user values (which the API has already refused when they look like options).
 */
import { cp, lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join, resolve, sep } from "node:path";
import type { SkillsApplyArgs, SkillsApplyResult } from "../src/protocol/frames";
import type { SkillSource } from "../src/protocol/resources";
import { AGENTS } from "./agents/definitions";
import { errorText, logger } from "./log";
import type { ProcessManager } from "./processes";

const log = logger("skills");

interface Manifest {
  /** skills folder → names of the skills this runtime installed there */
  installed: Record<string, string[]>;
}

export class SkillsApplier {
  private queue: Promise<unknown> = Promise.resolve();
  private last: SkillsApplyArgs | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly home: string,
    private readonly processes: ProcessManager,
    /** Which skills folders to fill (relative to HOME): those of the agents installed here. */
    private readonly targetDirs: () => Promise<string[]>,
  ) {}

  /** One apply at a time, in the order they were asked for. */
  apply(args: SkillsApplyArgs): Promise<SkillsApplyResult> {
    this.last = args;
    const run = this.queue.catch(() => undefined).then(() => this.applyNow(args));
    this.queue = run;
    return run;
  }

  /** After an agent was installed, give it the skills too. */
  async reapply(): Promise<void> {
    if (this.last) await this.apply(this.last);
  }

  private async applyNow({ version, config }: SkillsApplyArgs): Promise<SkillsApplyResult> {
    const work = await mkdtemp(join(tmpdir(), "agent-runtime-skills-"));
    const errors: SkillsApplyResult["errors"] = [];
    const found = new Map<string, string>(); // skill name → folder to copy
    try {
      for (const [index, source] of config.sources.entries()) {
        try {
          const root = await this.fetchSource(source, join(work, String(index)));
          for (const [name, dir] of await selectSkills(root, source)) {
            if (found.has(name)) throw new Error(`skill '${name}' is provided by an earlier source too`);
            found.set(name, dir);
          }
        } catch (err) {
          errors.push({ source: describe(source), error: errorText(err) });
          log.warn(`${describe(source)}: ${errorText(err)}`);
        }
      }
      const manifest = await this.readManifest();
      const next: Manifest = { installed: {} };
      for (const relative of await this.targetDirs()) {
        const target = join(this.home, relative);
        await mkdir(target, { recursive: true });
        for (const name of manifest.installed[relative] ?? []) await rm(join(target, name), { recursive: true, force: true });
        const mine: string[] = [];
        for (const [name, dir] of found) {
          const dest = join(target, name);
          if (await exists(dest)) {
            errors.push({ source: `skill ${name}`, error: `${dest} exists and was not installed by agent-runtime; left as it is` });
            continue;
          }
          await cp(dir, dest, { recursive: true, filter: async (src) => !(await lstat(src)).isSymbolicLink() });
          mine.push(name);
        }
        next.installed[relative] = mine;
      }
      await this.writeManifest(next);
      const skills = [...found.keys()].sort();
      log.info(`applied configuration ${version}: ${skills.length} skill(s)${errors.length ? `, ${errors.length} error(s)` : ""}`);
      return { version, appliedAtMs: Date.now(), skills, errors };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /** The folder a source's skills are read from (a fresh clone for git sources). */
  private async fetchSource(source: SkillSource, workDir: string): Promise<string> {
    let root: string;
    if (source.type === "local") {
      root = source.source.startsWith("~") ? join(homedir(), source.source.slice(1)) : source.source;
      if (!(await stat(root).catch(() => null))?.isDirectory()) throw new Error(`${root} is not a folder on this machine`);
    } else {
      const url = source.type === "github" ? `https://github.com/${source.source}.git` : source.source;
      await this.git(["clone", "--quiet", ...(source.ref ? ["--no-checkout"] : ["--depth", "1"]), "--", url, workDir], tmpdir());
      if (source.ref) await this.checkout(workDir, source.ref);
      root = workDir;
    }
    if (!source.subpath) return root;
    const inside = resolve(root, source.subpath);
    const real = await realpath(inside).catch(() => null);
    const realRoot = await realpath(root);
    if (!real || !(real === realRoot || real.startsWith(realRoot + sep))) throw new Error(`subpath '${source.subpath}' is not a folder inside the source`);
    return real;
  }

  /** Check out a branch, tag or commit: resolved to a commit first (a branch may exist only as origin/<ref>). */
  private async checkout(dir: string, ref: string): Promise<void> {
    if (ref.startsWith("-")) throw new Error(`ref '${ref}' looks like an option`); // refused by the API too
    for (const candidate of [ref, `origin/${ref}`]) {
      const sha = await this.git(["rev-parse", "--verify", "--quiet", `${candidate}^{commit}`], dir).catch(() => "");
      if (/^[0-9a-f]{40,64}$/.test(sha)) {
        await this.git(["checkout", "--quiet", "--detach", sha], dir);
        return;
      }
    }
    throw new Error(`ref '${ref}' is not a branch, tag or commit of the repository`);
  }

  /** Run git (no shell) as a tracked system process; resolves with its output. */
  private async git(args: string[], cwd: string): Promise<string> {
    const proc = await this.processes.spawn({
      command: "git",
      args,
      cwd,
      owner: "system",
      interactive: false,
      tty: false,
      label: "skills:git",
      // Never prompt for credentials: a private repository without access fails instead of hanging.
      // Only plain transports, whatever the source says (the API refuses `ext::` and friends too).
      env: { GIT_TERMINAL_PROMPT: "0", GIT_ASKPASS: "true", GIT_ALLOW_PROTOCOL: "https:http:ssh:git:file" },
    });
    proc.endInput();
    await proc.exited;
    const output = proc.outputText().trim();
    if (proc.info.exitCode !== 0) {
      throw new Error(`git ${args[0]} failed: ${output.split("\n").slice(-3).join(" ") || `exit ${proc.info.exitCode ?? proc.info.signal}`}`);
    }
    return output;
  }

  private async readManifest(): Promise<Manifest> {
    try {
      return JSON.parse(await readFile(join(this.dataDir, "skills-manifest.json"), "utf8")) as Manifest;
    } catch {
      return { installed: {} };
    }
  }

  private async writeManifest(manifest: Manifest): Promise<void> {
    await mkdir(this.dataDir, { recursive: true });
    await writeFile(join(this.dataDir, "skills-manifest.json"), JSON.stringify(manifest, null, 2));
  }
}

/** The skill folders (each with a SKILL.md) of a source root, narrowed to the named ones. */
async function selectSkills(root: string, source: SkillSource): Promise<[string, string][]> {
  const all = new Map<string, string>();
  if (await exists(join(root, "SKILL.md"))) all.set(root.split(sep).pop()!, root);
  for (const entry of await readdir(root, { withFileTypes: true })) {
    if (entry.isDirectory() && !entry.name.startsWith(".") && (await exists(join(root, entry.name, "SKILL.md")))) all.set(entry.name, join(root, entry.name));
  }
  if (!source.skills) {
    if (all.size === 0) throw new Error("no skills (folders with a SKILL.md) found");
    return [...all];
  }
  const missing = source.skills.filter((name) => !all.has(name));
  if (missing.length) throw new Error(`skill(s) not found in the source: ${missing.join(", ")}`);
  return source.skills.map((name) => [name, all.get(name)!]);
}

function describe(source: SkillSource): string {
  return `${source.type}:${source.source}${source.ref ? `@${source.ref}` : ""}${source.subpath ? `/${source.subpath}` : ""}`;
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/** The skills folders of the agents present on this machine (the mock agent is always present). */
export async function installedSkillsDirs(isInstalled: (agent: keyof typeof AGENTS) => Promise<boolean>): Promise<string[]> {
  const dirs: string[] = [];
  for (const def of Object.values(AGENTS)) {
    if (def.skillsDir && (def.launch.from === "builtin" || (await isInstalled(def.id)))) dirs.push(def.skillsDir);
  }
  return dirs;
}
