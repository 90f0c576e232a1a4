/**
 * An ACP registry on 127.0.0.1 for tests: `/registry.json` answers the document it is given (with an
 * ETag that follows its content, as a CDN's does), and any other path one of the files put in `files`.
 */
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface RegistryServer {
  /** The base address (`http://127.0.0.1:<port>`); the registry is at `${base}/registry.json`. */
  base: string;
  url: string;
  files: Map<string, Buffer>;
  /** Replace what the registry lists. */
  setAgents(agents: unknown[]): void;
  close(): Promise<void>;
}

export async function startRegistryServer(): Promise<RegistryServer> {
  let body = JSON.stringify({ version: "1.0.0", agents: [] });
  const files = new Map<string, Buffer>();
  const server = createServer((req, res) => {
    if (req.url === "/registry.json") {
      const etag = `"${createHash("sha256").update(body).digest("hex").slice(0, 16)}"`;
      if (req.headers["if-none-match"] === etag) return void res.writeHead(304, { etag }).end();
      return void res.writeHead(200, { "content-type": "application/json", etag }).end(body);
    }
    const file = files.get(req.url ?? "");
    if (!file) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/octet-stream" }).end(file);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    url: `${base}/registry.json`,
    files,
    setAgents(agents) {
      body = JSON.stringify({ version: "1.0.0", agents });
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}
