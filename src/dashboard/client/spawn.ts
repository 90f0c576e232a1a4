/** What "Start" on a machine's Processes tab asks for: a line with shell syntax (pipes, variables, quotes) runs in `sh -c`; a plain command runs as it is. */
export function spawnRequest(line: string, cwd: string, tty: boolean): { command: string; args: string[]; tty: boolean; interactive: boolean; cwd?: string } {
  const words = line.trim().split(/\s+/).filter(Boolean);
  const shell = /[|&;<>()$`*?~'"\\]/.test(line);
  return {
    command: shell ? "sh" : words[0]!,
    args: shell ? ["-c", line.trim()] : words.slice(1),
    tty,
    interactive: tty,
    ...(cwd.trim() ? { cwd: cwd.trim() } : {}),
  };
}
