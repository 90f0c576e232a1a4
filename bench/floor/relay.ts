/**
 * The floor's relay process (bench/floor/worker.ts): dials the worker's socket, writes each message to
 * the mock agent's stdin and sends back the line that answers it; writes and reads the files it is
 * handed (a write to a temporary name renamed over the path, as the sidecar does). `node relay.ts <ws url> <agent.js>`.
 */
import { spawn } from "node:child_process";
import { readFile, rename, writeFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import WebSocket from "ws";

const [url, agentScript] = process.argv.slice(2) as [string, string];
const agent = spawn(process.execPath, [agentScript], { stdio: ["pipe", "pipe", "inherit"] });
const socket = new WebSocket(url, { perMessageDeflate: false });
/** The worker's call id of each JSON-RPC id in flight. */
const calls = new Map<string, string>();

socket.on("open", () => process.stdout.write("ready\n"));
socket.on("message", (data, isBinary) => {
  const buffer = data as Buffer;
  if (isBinary) return void writeOne(buffer);
  const text = buffer.toString();
  const space = text.indexOf(" ");
  const id = text.slice(0, space);
  const message = text.slice(space + 1);
  if (message.startsWith("read ")) return void readOne(id, message.slice("read ".length));
  calls.set(JSON.stringify((JSON.parse(message) as { id: unknown }).id), id);
  agent.stdin.write(`${message}\n`);
});

/** `<id> write <path>\n<bytes>`: answered `<id> {"ok":true}` once the file is in place. */
async function writeOne(message: Buffer): Promise<void> {
  const newline = message.indexOf(10);
  const [id, , path] = message.subarray(0, newline).toString().split(" ", 3) as [string, string, string];
  const temporary = `${path}.${id}.part`;
  await writeFile(temporary, message.subarray(newline + 1));
  await rename(temporary, path);
  socket.send(`${id} {"ok":true}`);
}

/** `<id> read <path>`: answered with one binary message, `<id>\n<bytes>`. */
async function readOne(id: string, path: string): Promise<void> {
  const bytes = await readFile(path);
  socket.send(Buffer.concat([Buffer.from(`${id}\n`), bytes]));
}

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
