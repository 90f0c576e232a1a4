/**
 * The egress proxy of one sandbox (docs/architecture.md, "Sandboxes"): the only way out of a sandbox
 * whose network is an allowlist. It listens on a unix socket that socat, inside the sandbox's own network
 * namespace, bridges to a loopback port; agents reach it through HTTP_PROXY/HTTPS_PROXY. It serves
 * `CONNECT host:port` (TLS and anything else) and plain-HTTP requests in absolute form, lets through what
 * the allowlist names, and answers anything else with 403, reporting each refusal. A listed host name
 * that resolves to a loopback address is refused unless that loopback port is listed too (a name must
 * not lead to the machine's own services).
 */
import { lookup } from "node:dns/promises";
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { connect, isIP, type Socket } from "node:net";
import { rm } from "node:fs/promises";
import type { SandboxNetwork } from "@agent-runtime/protocol/sandbox";
import { hostOf, isLoopbackHost } from "./bwrap-args";
import { errnoCode } from "../log";

export interface BlockedConnection {
  host: string;
  port: number;
  /** `CONNECT`, or the plain request's method. */
  method: string;
  reason: string;
}

/** Does the allowlist let `host:port` through? Loopback only on a listed port; a bare name allows any port. */
export function allows(network: SandboxNetwork, host: string, port: number): boolean {
  if (network.mode === "open") return true;
  if (network.mode === "none") return false;
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return network.allow.some((entry) => {
    const e = entry.toLowerCase();
    const name = hostOf(e);
    const hasPort = e.startsWith("[") ? /\]:\d+$/.test(e) : e.includes(":");
    const entryPort = hasPort ? Number(e.slice(e.lastIndexOf(":") + 1)) : null;
    if (entryPort !== null && entryPort !== port) return false;
    if (entryPort === null && isLoopbackHost(h)) return false;
    if (name.startsWith("*.")) return h.endsWith(name.slice(1)) && h.length > name.length - 1;
    return name === h;
  });
}

function isLoopbackAddress(address: string): boolean {
  return address === "::1" || address.startsWith("127.") || address === "0.0.0.0" || address === "::" || address.startsWith("::ffff:127.");
}

function splitHostPort(authority: string, defaultPort: number): { host: string; port: number } | null {
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(authority);
  if (!match) return null;
  const port = match[2] ? Number(match[2]) : defaultPort;
  if (!(port >= 1 && port <= 65_535)) return null;
  return { host: match[1]!.replace(/^\[|\]$/g, ""), port };
}

export class EgressProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(
    private readonly network: SandboxNetwork,
    private readonly onBlocked: (blocked: BlockedConnection) => void,
  ) {
    this.server = createServer((req, res) => void this.forward(req, res));
    this.server.on("connect", (req: IncomingMessage, socket: Socket, head: Buffer) => void this.tunnel(req, socket, head));
    this.server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
  }

  /** On a unix socket (Linux: bridged into the sandbox), or on a loopback port (macOS: reached directly); answers the port. */
  listen(path: string | null): Promise<number | null> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      const listening = () => {
        const address = this.server.address();
        resolve(typeof address === "object" && address ? address.port : null);
      };
      if (path === null) this.server.listen(0, "127.0.0.1", listening);
      else this.server.listen(path, listening);
    });
  }

  async close(path: string | null): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    if (path) await rm(path, { force: true });
  }

  /** Where to connect for `host:port`, or why not: the allowlist, then what the name resolves to. */
  private async decide(host: string, port: number, method: string): Promise<{ address: string } | { refused: string }> {
    const refuse = (reason: string) => {
      this.onBlocked({ host, port, method, reason });
      return { refused: reason };
    };
    if (!allows(this.network, host, port)) return refuse(`${host}:${port} is not on this sandbox's allowlist`);
    if (isIP(host)) return { address: host };
    let address: string;
    try {
      address = (await lookup(host)).address;
    } catch (err) {
      return { refused: `${host} does not resolve: ${errnoCode(err) ?? String(err)}` };
    }
    if (isLoopbackAddress(address) && !isLoopbackHost(host) && !allows(this.network, address, port)) {
      return refuse(`${host} resolves to the loopback address ${address}, whose port ${port} is not listed`);
    }
    return { address };
  }

  private async tunnel(req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    socket.on("error", () => socket.destroy());
    const target = splitHostPort(req.url ?? "", 443);
    if (!target) {
      socket.end("HTTP/1.1 400 Bad Request\r\n\r\n");
      return;
    }
    const decision = await this.decide(target.host, target.port, "CONNECT");
    if ("refused" in decision) {
      const body = `agent-runtime sandbox: ${decision.refused}\n`;
      socket.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      return;
    }
    const upstream = connect({ host: decision.address, port: target.port });
    upstream.once("connect", () => {
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on("error", () => {
      if (!socket.destroyed) socket.end("HTTP/1.1 502 Bad Gateway\r\n\r\n");
    });
    socket.once("close", () => upstream.destroy());
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? "");
    } catch {
      res.writeHead(400, { "content-type": "text/plain" }).end("agent-runtime sandbox: a proxy request names an absolute http:// URL\n");
      return;
    }
    if (url.protocol !== "http:") {
      res.writeHead(400, { "content-type": "text/plain" }).end(`agent-runtime sandbox: ${url.protocol} goes through CONNECT\n`);
      return;
    }
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const port = Number(url.port || 80);
    const decision = await this.decide(host, port, req.method ?? "GET");
    if ("refused" in decision) {
      res.writeHead(403, { "content-type": "text/plain" }).end(`agent-runtime sandbox: ${decision.refused}\n`);
      return;
    }
    // RFC 9112 §3.2.2: a proxy sends the target's authority as Host, whatever the client put there (some
    // clients, Node 24's among them, send the proxy's own when asked for an absolute URL).
    const headers: IncomingHttpHeaders = { ...req.headers, host: url.host };
    delete headers["proxy-connection"];
    delete headers["proxy-authorization"];
    const upstream = httpRequest(
      { host: decision.address, port, method: req.method, path: `${url.pathname}${url.search}`, headers, setHost: false },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", (err) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`agent-runtime sandbox: ${host}:${port}: ${err.message}\n`);
    });
    req.pipe(upstream);
  }
}
