/**
 * What the mock agent does on its own, without asking the client, as real agents do in an auto mode:
 * `/sh <command line>` runs the line with `/bin/sh -c` in the session's folder as its own child, and
 * `/fetch <url>` makes its own HTTP GET through HTTP_PROXY/HTTPS_PROXY when they are set (as real agents'
 * HTTP clients do). Each is reported as an ACP tool call with what happened, so a sandbox's refusals are
 * seen in the transcript exactly as an agent met them.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect as tlsConnect } from "node:tls";
import { errnoCode } from "../log";

const MAX_OUTPUT = 64 * 1024;

/** The line's output (stdout and stderr as they came) and its exit code. */
export function runShell(line: string, cwd: string, signal: AbortSignal): Promise<{ output: string; exitCode: number | null; signal: string | null }> {
  return new Promise((resolve) => {
    const child = spawn("/bin/sh", ["-c", line], { cwd, stdio: ["ignore", "pipe", "pipe"], signal });
    let output = "";
    const take = (chunk: Buffer) => {
      if (output.length < MAX_OUTPUT) output += chunk.toString("utf8");
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", (err) => {
      if (errnoCode(err) !== "ABORT_ERR") output += `${err.message}\n`;
    });
    child.on("close", (code, sig) => resolve({ output: output.slice(0, MAX_OUTPUT), exitCode: code, signal: sig }));
  });
}

function proxyFor(url: URL): URL | null {
  const raw = url.protocol === "https:" ? (process.env.HTTPS_PROXY ?? process.env.https_proxy) : (process.env.HTTP_PROXY ?? process.env.http_proxy);
  if (!raw) return null;
  const noProxy = (process.env.NO_PROXY ?? process.env.no_proxy ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, "");
  if (noProxy.some((h) => h === "*" || host === h || host.endsWith(h.startsWith(".") ? h : `.${h}`))) return null;
  return new URL(raw);
}

function statusOf(res: IncomingMessage): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let body = "";
    res.on("data", (chunk: Buffer) => {
      if (body.length < 4096) body += chunk.toString("utf8");
    });
    res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    res.on("error", reject);
  });
}

/** One GET of `target`: through the proxy the environment names (CONNECT for https), else directly. */
export function fetchOnce(target: string, timeoutMs = 15_000): Promise<{ status: number; body: string }> {
  const url = new URL(target);
  const proxy = proxyFor(url);
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  return new Promise((resolve, reject) => {
    const fail = (err: Error) => reject(err);
    if (!proxy) {
      const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, { method: "GET", timeout: timeoutMs }, (res) =>
        statusOf(res).then(resolve, fail),
      );
      req.on("timeout", () => req.destroy(new Error(`timed out after ${timeoutMs} ms`)));
      req.on("error", fail);
      req.end();
      return;
    }
    const proxyPort = Number(proxy.port || 80);
    if (url.protocol === "http:") {
      const req = httpRequest(
        // Absolute-form, as HTTP clients ask a proxy, on an agent of its own: Node's global agent (with
        // NODE_USE_ENV_PROXY, as inside a sandbox) would proxy this request a second time. No Host of the
        // target's: the proxy sets it from the URL.
        { host: proxy.hostname, port: proxyPort, method: "GET", path: url.href, timeout: timeoutMs, agent: new HttpAgent() },
        (res) => statusOf(res).then(resolve, fail),
      );
      req.on("timeout", () => req.destroy(new Error(`timed out after ${timeoutMs} ms`)));
      req.on("error", fail);
      req.end();
      return;
    }
    const connect = httpRequest({
      host: proxy.hostname,
      port: proxyPort,
      method: "CONNECT",
      path: `${url.hostname}:${port}`,
      timeout: timeoutMs,
      agent: new HttpAgent(),
    });
    connect.on("connect", (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, body: `the proxy refused CONNECT ${url.hostname}:${port}` });
        return;
      }
      const tls = tlsConnect({ socket, servername: url.hostname });
      const req = httpsRequest(url, { method: "GET", createConnection: () => tls, timeout: timeoutMs }, (answer) => statusOf(answer).then(resolve, fail));
      req.on("error", fail);
      req.end();
    });
    connect.on("timeout", () => connect.destroy(new Error(`timed out after ${timeoutMs} ms`)));
    connect.on("error", fail);
    connect.end();
  });
}

function toolCallId(kind: string): string {
  return `mock-${kind}-${randomUUID().slice(0, 8)}`;
}

/** How a turn reports: a `session/update`, and words of the agent's answer. */
export interface Report {
  update(update: Record<string, unknown>): Promise<void>;
  say(text: string): Promise<void>;
}

/** `/sh`: the line runs as this process's child (inside whatever encloses the agent), reported with its output and exit code. */
export async function shellTurn(report: Report, cwd: string, line: string, signal: AbortSignal): Promise<void> {
  const id = toolCallId("sh");
  await report.update({
    sessionUpdate: "tool_call",
    toolCallId: id,
    title: `Run ${line}`,
    kind: "execute",
    status: "in_progress",
    rawInput: { command: line },
  });
  const ran = await runShell(line, cwd, signal);
  await report.update({
    sessionUpdate: "tool_call_update",
    toolCallId: id,
    status: ran.exitCode === 0 ? "completed" : "failed",
    content: [{ type: "content", content: { type: "text", text: ran.output } }],
    rawOutput: { output: ran.output, exitCode: ran.exitCode, signal: ran.signal },
  });
  return report.say(`Ran ${line}: ${ran.signal ?? `exit code ${ran.exitCode}`}\n${ran.output}`);
}

/** `/fetch`: the agent's own GET, reported with the status it got or the error. */
export async function fetchTurn(report: Report, url: string): Promise<void> {
  const id = toolCallId("fetch");
  await report.update({ sessionUpdate: "tool_call", toolCallId: id, title: `Fetch ${url}`, kind: "fetch", status: "in_progress", rawInput: { url } });
  let said: string;
  let ok = false;
  try {
    const got = await fetchOnce(url);
    ok = got.status >= 200 && got.status < 400;
    said = `status ${got.status}: ${got.body.trim().slice(0, 200)}`;
  } catch (err) {
    said = `error: ${err instanceof Error ? err.message : String(err)}`;
  }
  await report.update({
    sessionUpdate: "tool_call_update",
    toolCallId: id,
    status: ok ? "completed" : "failed",
    content: [{ type: "content", content: { type: "text", text: said } }],
  });
  return report.say(`Fetched ${url}: ${said}`);
}
