/**
 * Applies the team's skills configuration on this machine: fetches each source (a local folder,
 * a git clone, a GitHub repository), narrows it to `subpath` and the named `skills` (folders with
 * a SKILL.md), and copies them where the agents read skills (e.g. ~/.claude/skills/<name>/).
 *
 * It replaces what an earlier configuration put there and nothing else: what it installed is
 * recorded in a manifest before it appears, each skill is staged and renamed into place whole, and a
 * folder it did not create is never touched. A broken source or skill is reported on its own; the
 * others still apply. The same configuration applied again to the same folders does nothing. git runs without a shell, with `--` before
 * user values (which the API has already refused when they look like options).
 */
import { copyFile, lstat, mkdir, mkdtemp, readdir, realpath, rename, rm, stat } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { basename, join, resolve, sep } from "node:path";
import { z } from "zod";
import { type SkillsApplyArgs, SkillsApplyResult } from "@agent-runtime/protocol/ops/config";
import { SkillName, type SkillSource } from "@agent-runtime/protocol/skills";
import { AGENTS } from "../agents/definitions";
import { errorText, logger } from "../log";
import type { ProcessManager } from "../processes/processes";
import { appliedRecord, ManifestFile } from "./manifest-file";
import { ManifestApplier } from "./manifest-applier";

const log = logger("skills");

const Manifest = z.object({
  /** skills folder (relative to HOME) → names of the skills this runtime installed there */
  installed: z.record(z.string(), z.array(z.string())),
  /** The last configuration applied, and to which folders: a reconnect with the same one re-applies nothing. */
  applied: appliedRecord(SkillsApplyResult),
});
type Manifest = z.infer<typeof Manifest>;

/** A skill folder copied here may hold at most this much: a mistaken source (a whole HOME) fails alone. */
const MAX_SKILL_FILES = 5_000;
const MAX_SKILL_BYTES = 64 * 1024 * 1024;
const STAGING = ".agent-runtime-staging-";
const RETIRED = ".agent-runtime-retired-";

export class SkillsApplier extends ManifestApplier<SkillsApplyArgs, SkillsApplyResult, Manifest, SkillsTarget> {
  constructor(
    dataDir: string,
    private readonly home: string,
    private readonly processes: ProcessManager,
    /** Which skills folders to fill (relative to HOME): those of the agents installed here. */
    targetDirs: () => Promise<SkillsTarget[]>,
  ) {
    super(new ManifestFile(join(dataDir, "skills-manifest.json"), Manifest, () => ({ installed: {}, applied: undefined })), targetDirs);
  }

  protected override unchanged(version: string): void {
    log.info(`configuration ${version} is applied already: nothing fetched or copied`);
  }

  protected applied({ version, skills, errors }: SkillsApplyResult): void {
    log.info(`applied configuration ${version}: ${skills.length} skill(s)${errors.length ? `, ${errors.length} error(s)` : ""}`);
  }

  protected async applyChanged({ version, config }: SkillsApplyArgs, targets: SkillsTarget[], manifest: Manifest): Promise<SkillsApplyResult> {
    const work = await mkdtemp(join(tmpdir(), "agent-runtime-skills-"));
    const errors: SkillsApplyResult["errors"] = [];
    const found = new Map<string, string>(); // skill name → folder to copy
    try {
      for (const [index, source] of config.sources.entries()) {
        try {
          const root = await this.fetchSource(source, join(work, String(index)));
          const selected = await selectSkills(root, source);
          for (const error of selected.errors) errors.push({ source: describe(source), error });
          for (const [name, dir] of selected.skills) {
            if (found.has(name))
              errors.push({ source: describe(source), error: `skill '${name}' is provided by an earlier source too; the first one is used` });
            else found.set(name, dir);
          }
        } catch (err) {
          errors.push({ source: describe(source), error: errorText(err) });
          log.warn(`${describe(source)}: ${errorText(err)}`);
        }
      }
      const perAgent: Record<string, string[]> = {};
      for (const { agent, dir: relative } of targets) {
        perAgent[agent] = await this.installInto(relative, found, manifest, errors);
      }
      // Folders of agents no longer here: what we installed there is ours to remove.
      for (const relative of Object.keys(manifest.installed)) {
        if (!targets.some((t) => t.dir === relative)) await this.installInto(relative, new Map(), manifest, errors);
      }
      const skills = [...new Set(Object.values(perAgent).flat())].sort();
      return { version, appliedAtMs: Date.now(), skills, perAgent, errors };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * Make one skills folder hold exactly `found` (of what this runtime installs there). Each skill is
   * copied into a staging folder, recorded in the manifest, and only then renamed into place, so no
   * half-copied skill ever appears and nothing of ours is ever left unrecorded. Returns what is installed.
   */
  private async installInto(relative: string, found: Map<string, string>, manifest: Manifest, errors: SkillsApplyResult["errors"]): Promise<string[]> {
    const target = join(this.home, relative);
    await mkdir(target, { recursive: true });
    for (const entry of await readdir(target)) {
      if (entry.startsWith(STAGING) || entry.startsWith(RETIRED)) await rm(join(target, entry), { recursive: true, force: true });
    }
    const mine = new Set(manifest.installed[relative] ?? []);
    const save = async () => {
      manifest.installed[relative] = [...mine].sort();
      if (mine.size === 0) delete manifest.installed[relative];
      await this.manifest.write(manifest);
    };
    for (const name of [...mine]) {
      if (found.has(name)) continue;
      await rm(join(target, name), { recursive: true, force: true });
      mine.delete(name);
      await save();
    }
    for (const [name, dir] of found) {
      const dest = join(target, name);
      if (!mine.has(name) && (await exists(dest))) {
        errors.push({ source: `skill ${name}`, error: `${dest} exists and was not installed by agent-runtime; left as it is` });
        continue;
      }
      const staging = join(target, `${STAGING}${name}`);
      if (isInside(target, dir)) {
        errors.push({ source: `skill ${name}`, error: `${dir} holds the skills folder ${target} itself: not a skill folder` });
        continue;
      }
      try {
        await copySkill(dir, staging);
      } catch (err) {
        await rm(staging, { recursive: true, force: true });
        errors.push({ source: `skill ${name}`, error: errorText(err) });
        continue;
      }
      if (!mine.has(name)) {
        mine.add(name);
        await save();
      }
      const retired = join(target, `${RETIRED}${name}`);
      if (await exists(dest)) await rename(dest, retired);
      await rename(staging, dest);
      await rm(retired, { recursive: true, force: true });
    }
    await save();
    return [...mine].sort();
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
}

/**
 * The skill folders of a source root (each with a SKILL.md that is a plain file), narrowed to the named
 * ones. A folder that cannot be a skill (a name the API would refuse, a SKILL.md that is a link) is
 * reported on its own and the others are still selected.
 */
async function selectSkills(root: string, source: SkillSource): Promise<{ skills: [string, string][]; errors: string[] }> {
  const all = new Map<string, string>();
  const errors: string[] = [];
  const consider = async (name: string, dir: string) => {
    const marker = await lstat(join(dir, "SKILL.md")).catch(() => null);
    if (!marker) return;
    if (!SkillName.safeParse(name).success)
      errors.push(`'${name}' is not a valid skill name (letters, digits, '.', '_' or '-', not starting with '.' or '-'); skipped`);
    else if (!marker.isFile()) errors.push(`the SKILL.md of '${name}' is not a plain file (a link is not followed); skipped`);
    else all.set(name, dir);
  };
  await consider(basename(resolve(root)), root);
  for (const entry of await readdir(root, { withFileTypes: true })) {
    if (entry.isDirectory() && !entry.name.startsWith(".")) await consider(entry.name, join(root, entry.name));
  }
  if (!source.skills) {
    if (all.size === 0 && errors.length === 0) throw new Error("no skills (folders with a SKILL.md) found");
    return { skills: [...all], errors };
  }
  const missing = source.skills.filter((name) => !all.has(name));
  if (missing.length) errors.push(`skill(s) not found in the source: ${missing.join(", ")}`);
  return { skills: source.skills.filter((name) => all.has(name)).map((name) => [name, all.get(name)!]), errors };
}

/**
 * Copy a skill folder: folders and plain files only. Links are not followed (skipped); anything else
 * (a FIFO, a socket, a device) fails this skill, as does a folder past the size limits.
 */
async function copySkill(from: string, to: string): Promise<void> {
  let files = 0;
  let bytes = 0;
  const walk = async (src: string, dest: string) => {
    await mkdir(dest, { recursive: true });
    for (const entry of await readdir(src)) {
      const path = join(src, entry);
      const info = await lstat(path);
      if (info.isSymbolicLink()) continue;
      if (info.isDirectory()) await walk(path, join(dest, entry));
      else if (info.isFile()) {
        files++;
        bytes += info.size;
        if (files > MAX_SKILL_FILES || bytes > MAX_SKILL_BYTES)
          throw new Error(`more than ${MAX_SKILL_FILES} files or ${MAX_SKILL_BYTES / 1024 / 1024} MiB: not a skill folder`);
        await copyFile(path, join(dest, entry));
      } else throw new Error(`${path} is not a file or a folder (a FIFO, socket or device): the skill is not installed`);
    }
  };
  await walk(from, to);
}

function describe(source: SkillSource): string {
  return `${source.type}:${source.source}${source.ref ? `@${source.ref}` : ""}${source.subpath ? `/${source.subpath}` : ""}`;
}

/** Is `path` the folder `dir` or inside it? */
function isInside(path: string, dir: string): boolean {
  const [p, d] = [resolve(path), resolve(dir)];
  return p === d || p.startsWith(d + sep);
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/** An agent's skills folder, relative to HOME. */
export interface SkillsTarget {
  agent: string;
  dir: string;
}

/** The skills folders of the agents present on this machine (the mock agent is always present). */
export async function installedSkillsDirs(isInstalled: (agent: keyof typeof AGENTS) => Promise<boolean>): Promise<SkillsTarget[]> {
  const dirs: SkillsTarget[] = [];
  for (const def of Object.values(AGENTS)) {
    if (def.skillsDir && (def.launch.from === "builtin" || (await isInstalled(def.id)))) dirs.push({ agent: def.id, dir: def.skillsDir });
  }
  return dirs;
}
