/** How an agent's process is started: its command line, environment and folder (the sandbox wraps it: sandbox/enclosure.ts). */
export interface AgentLaunch {
  command: string;
  args: string[];
  env?: Record<string, string>;
  cwd: string;
}
