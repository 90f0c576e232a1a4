/**
 * The app a preview test opens: a real Node HTTP server on the machine (this host), with the behaviours a
 * dev server has: pages, redirects, cookies, streamed bodies both ways, server-sent events, a WebSocket
 * echo, and an endless response for a browser that stops reading.
 */
import { createHash } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";

export interface PreviewApp {
  port: number;
  /** The last request's headers and path (with its query), as the app saw them. */
  lastHeaders: http.IncomingHttpHeaders;
  lastUrl: string;
  /** Endless responses whose browser went away (their socket closed). */
  abandoned: number;
  /** Lets the SSE stream send its second event. */
  releaseEvents(): void;
  close(): Promise<void>;
}

/** Bytes of a known pattern: the same on both ends without keeping them. */
export function patternPiece(size: number): Buffer {
  const piece = Buffer.alloc(size);
  for (let i = 0; i < size; i++) piece[i] = (i * 31 + 7) & 0xff;
  return piece;
}

export async function startPreviewApp(): Promise<PreviewApp> {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const app: PreviewApp = {
    port: 0,
    lastHeaders: {},
    lastUrl: "",
    abandoned: 0,
    releaseEvents: () => release(),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((req, res) => {
    app.lastHeaders = req.headers;
    app.lastUrl = req.url ?? "";
    const url = new URL(req.url ?? "/", "http://app");
    if (url.pathname === "/") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("the app's home page");
    } else if (url.pathname === "/hello") {
      // Cookies for the parent domain, spelled as RFC 6265 §5.2 lets a browser read them, and one named as the runtime's.
      res.writeHead(200, {
        "content-type": "text/html",
        "set-cookie": [
          "app_session=1; Path=/; Domain=localhost",
          "app_b=2; Path=/; Domain =localhost",
          "app_c=3;\tdomain\t=\t.localhost",
          "__Host-ar_preview=planted; Path=/; Secure",
        ],
      });
      res.end(`<h1>hello ${url.searchParams.get("name") ?? ""}</h1>`);
    } else if (url.pathname === "/probe") {
      // What a previewed page's script can reach of the origin it is served under: the API as the signed-in
      // user, the dashboard's storage, the cookies. Each outcome is written into the page.
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<!doctype html><pre id="out">running</pre><script>
        const out = [];
        try { out.push("storage: " + typeof localStorage.getItem("x")); } catch (e) { out.push("storage: " + e.name); }
        try { out.push("cookie: " + JSON.stringify(document.cookie)); } catch (e) { out.push("cookie: " + e.name); }
        fetch("/v1/whoami", { credentials: "include" })
          .then((r) => "whoami: " + r.status, (e) => "whoami: " + e.name)
          .then((line) => { out.push(line); document.getElementById("out").textContent = out.join("\\n"); });
      </script>`);
    } else if (url.pathname === "/redirect") {
      res.writeHead(302, { location: url.searchParams.get("to") ?? "/hello" });
      res.end();
    } else if (url.pathname === "/echo-hash" && req.method === "POST") {
      const hash = createHash("sha256");
      let bytes = 0;
      req.on("data", (chunk: Buffer) => {
        hash.update(chunk);
        bytes += chunk.length;
      });
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ bytes, sha256: hash.digest("hex") }));
      });
    } else if (url.pathname === "/bytes") {
      // A body of `size` bytes, written as the reader takes it (never whole in this process either).
      const size = Number(url.searchParams.get("size") ?? 0);
      const piece = patternPiece(64 * 1024);
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(size) });
      let sent = 0;
      const write = () => {
        while (sent < size) {
          const part = piece.subarray(0, Math.min(piece.length, size - sent));
          sent += part.length;
          if (!res.write(part)) return void res.once("drain", write);
        }
        res.end();
      };
      write();
    } else if (url.pathname === "/endless") {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const piece = patternPiece(64 * 1024);
      const write = () => {
        while (!res.destroyed && res.write(piece));
        if (!res.destroyed) res.once("drain", write);
      };
      res.on("close", () => app.abandoned++);
      write();
    } else if (url.pathname === "/events") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write("data: first\n\n");
      void released.then(() => {
        res.write("data: second\n\n");
        res.end();
      });
    } else {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not here");
    }
  });
  const wss = new WebSocketServer({ server, handleProtocols: (protocols) => (protocols.has("echo-v1") ? "echo-v1" : false) });
  wss.on("connection", (ws, req) => {
    app.lastHeaders = req.headers;
    ws.on("message", (data, isBinary) => ws.send(data, { binary: isBinary }));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  app.port = (server.address() as AddressInfo).port;
  return app;
}

/** A port nothing listens on (taken, then let go). */
export async function freePort(): Promise<number> {
  const server = http.createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
