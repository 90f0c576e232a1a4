/**
 * The floor's relay process (bench/floor/worker.ts): dials the worker's socket, writes each message to
 * the mock agent's stdin and sends back the line that answers it. `node relay.ts <ws url> <agent.js>`.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import WebSocket from "ws";

const [url, agentScript] = process.argv.slice(2) as [string, string];
const agent = spawn(process.execPath, [agentScript], { stdio: ["pipe", "pipe", "inherit"] });
const socket = new WebSocket(url, { perMessageDeflate: false });
/** The worker's call id of each JSON-RPC id in flight. */
const calls = new Map<string, string>();

socket.on("open", () => process.stdout.write("ready\n"));
socket.on("message", (data) => {
  const text = data.toString();
  const space = text.indexOf(" ");
  const message = text.slice(space + 1);
  calls.set(JSON.stringify((JSON.parse(message) as { id: unknown }).id), text.slice(0, space));
  agent.stdin.write(`${message}\n`);
});
createInterface({ input: agent.stdout }).on("line", (line) => {
  const key = JSON.stringify((JSON.parse(line) as { id?: unknown }).id);
  const call = calls.get(key);
  if (call === undefined) return; // a notification: the floor measures round trips only
  calls.delete(key);
  socket.send(`${call} ${line}`);
});
socket.on("close", () => agent.kill());
process.on("SIGTERM", () => {
  agent.kill();
  process.exit(0);
});
