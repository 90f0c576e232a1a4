/**
 * The sandbox's rules as data (docs/architecture.md, "Sandboxes"): the owner's limits as read, what an
 * operation is refused for, what the allowlist lets through, the order of bubblewrap's mounts, and the
 * egress proxy over a real unix socket.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { SandboxSpec } from "@agent-runtime/protocol/sandbox";
import { bwrapArgs, type EnclosurePaths, proxyEnv } from "./bwrap-args";
import { allows, type BlockedConnection, EgressProxy } from "./egress-proxy";
import { capabilityOf, refusal } from "./guard";
import { OwnerLimitsError, ownerLimits, readOwnerLimitsFile } from "./owner-limits";

const HOME = "/home/pat";
const spec = (profile: SandboxSpec["profile"], mode: SandboxSpec["network"]["mode"], allow: string[] = []): SandboxSpec => ({
  profile,
  network: { mode, allow },
  denyRead: [],
});

describe("the owner's limits", () => {
  it("reads flags before the file, expands ~/ and refuses what it does not know", () => {
    const limits = ownerLimits(
      { sandbox: "workspace", allowNetwork: "api.example.com,127.0.0.1:8080", deny: "terminal,files", roots: "~/code,/srv/work" },
      { sandbox: "full", denyRead: ["~/.secrets"] },
      HOME,
    );
    expect(limits).toEqual({
      floor: { profile: "workspace", network: { mode: "allowlist", allow: ["api.example.com", "127.0.0.1:8080"] }, denyRead: ["~/.secrets"] },
      deny: ["terminal", "files"],
      roots: ["/home/pat/code", "/srv/work"],
    });
    expect(ownerLimits({}, { sandbox: "read-only", allowNetwork: "none" }, HOME).floor).toEqual(spec("read-only", "none"));
    expect(ownerLimits({}, null, HOME).floor).toEqual(spec("full", "open"));
    expect(() => ownerLimits({ sandbox: "strict" }, null, HOME)).toThrow(OwnerLimitsError);
    expect(() => ownerLimits({ deny: "shell" }, null, HOME)).toThrow(/--deny: 'shell'/);
    expect(() => ownerLimits({ roots: "code" }, null, HOME)).toThrow(/neither absolute/);
    expect(() => ownerLimits({ allowNetwork: "not a host" }, null, HOME)).toThrow(/--allow-network/);
  });

  it("reads <config dir>/sandbox.json through its schema, and says what is wrong in it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "owner-file-"));
    try {
      const file = join(dir, "sandbox.json");
      expect(await readOwnerLimitsFile(file)).toBeNull();
      writeFileSync(file, JSON.stringify({ sandbox: "read-only", allowNetwork: ["github.com"], deny: ["files"], roots: ["~/code"] }));
      const limits = ownerLimits({}, await readOwnerLimitsFile(file), HOME);
      expect(limits).toEqual({ floor: spec("read-only", "allowlist", ["github.com"]), deny: ["files"], roots: ["/home/pat/code"] });
      writeFileSync(file, JSON.stringify({ sandbox: "read-only", shell: false }));
      await expect(readOwnerLimitsFile(file)).rejects.toThrow(/sandbox\.json/);
      writeFileSync(file, "{ not json");
      await expect(readOwnerLimitsFile(file)).rejects.toThrow(/is not JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a denied capability and a folder outside the roots, naming the flag", async () => {
    const limits = ownerLimits({ deny: "terminal", roots: "/srv/work" }, null, HOME);
    const resolvePath = (p: string) => (p === "~" ? HOME : p);
    expect(capabilityOf("processes.spawn", { command: "sh", tty: true } as never)).toEqual(["processes", "terminal"]);
    expect((await refusal(limits, "processes.spawn", { command: "sh", tty: true, cwd: "/srv/work" } as never, resolvePath))?.message).toContain(
      "--deny terminal",
    );
    expect(await refusal(limits, "processes.spawn", { command: "sh", cwd: "/srv/work/app" } as never, resolvePath)).toBeNull();
    expect((await refusal(limits, "processes.spawn", { command: "sh", cwd: "/srv/workshop" } as never, resolvePath))?.message).toContain("--roots");
    // A listing of the home folder (no path) names the home folder, outside the roots.
    expect((await refusal(limits, "fs.entries", {} as never, resolvePath))?.message).toContain("--roots");
    expect((await refusal(limits, "acp.restore", { sessions: [{ sessionId: "s", cwd: "/etc", mcpServers: [] }] } as never, resolvePath))?.message).toContain(
      "--roots",
    );
    expect(await refusal(limits, "acp.list", {} as never, resolvePath)).toBeNull();
    // The folder the agent is told is the one judged, whatever the worker says of it beside the message.
    const message = (method: string, cwd: string) => JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { sessionId: "s", cwd, mcpServers: [] } });
    const lying = { serverId: "x", message: message("session/new", "/etc"), method: "session/new", cwd: "/srv/work", awaitId: 1 };
    expect((await refusal(limits, "acp.post", lying as never, resolvePath))?.message).toContain("'/etc' is outside");
    const resume = { serverId: "x", message: message("session/resume", "/home/pat"), method: "session/resume", awaitId: 2 };
    expect((await refusal(limits, "acp.post", resume as never, resolvePath))?.message).toContain("--roots");
    const prompt = {
      serverId: "x",
      message: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "session/prompt", params: { cwd: "/etc" } }),
      method: "session/prompt",
      awaitId: 3,
    };
    expect(await refusal(limits, "acp.post", prompt as never, resolvePath)).toBeNull();
  });
});

describe("the allowlist", () => {
  const network = { mode: "allowlist" as const, allow: ["github.com", "*.npmjs.org", "127.0.0.1:8080", "api.example.com:443"] };
  it("lets through listed hosts, subdomains of a wildcard, and loopback only on a listed port", () => {
    expect(allows(network, "github.com", 443)).toBe(true);
    expect(allows(network, "github.com", 22)).toBe(true);
    expect(allows(network, "registry.npmjs.org", 443)).toBe(true);
    expect(allows(network, "npmjs.org", 443)).toBe(false);
    expect(allows(network, "evilnpmjs.org", 443)).toBe(false);
    expect(allows(network, "127.0.0.1", 8080)).toBe(true);
    expect(allows(network, "127.0.0.1", 8081)).toBe(false);
    expect(allows(network, "api.example.com", 80)).toBe(false);
    expect(allows({ mode: "allowlist", allow: ["localhost"] }, "localhost", 3000)).toBe(false);
    expect(allows({ mode: "none", allow: [] }, "github.com", 443)).toBe(false);
  });

  it("sends loopback through the proxy only when a loopback port is listed", () => {
    expect(proxyEnv(spec("workspace", "allowlist", ["127.0.0.1:8080"])).NO_PROXY).toBe("");
    expect(proxyEnv(spec("workspace", "allowlist", ["github.com"])).NO_PROXY).toBe("localhost,127.0.0.1,::1");
    expect(proxyEnv(spec("workspace", "allowlist", [])).HTTPS_PROXY).toBe("http://127.0.0.1:3128");
    expect(proxyEnv(spec("workspace", "none"))).toEqual({});
  });
});

describe("bubblewrap's arguments", () => {
  const paths: EnclosurePaths = {
    hiddenDirs: ["/home/pat/.ssh", "/home/pat/.agent-runtime", "/home/pat/code/app/.ssh"],
    hiddenFiles: ["/home/pat/.netrc"],
    standIn: "/tmp/x/unreadable",
    reveal: ["/home/pat/.agent-runtime/agents"],
    keep: ["/home/pat"],
    writable: ["/home/pat/code/app", "/home/pat/.agent-runtime/worktrees/w1"],
    writableFiles: [],
    readOnlyInside: ["/home/pat/code/app/.git/hooks"],
    proxySocket: null,
    ingressDir: null,
    cwd: "/home/pat",
  };
  const order = (args: string[], target: string) => args.findIndex((a, i) => a === target && args[i - 1] !== target);

  it("applies the most specific rule last: secrets inside writable folders hidden, worktrees inside the data folder writable", () => {
    const args = bwrapArgs(spec("workspace", "open"), paths, "agent", ["--acp"], false);
    expect(args.slice(args.indexOf("--"))).toEqual(["--", "agent", "--acp"]);
    expect(order(args, "/home/pat/code/app")).toBeLessThan(order(args, "/home/pat/code/app/.ssh"));
    expect(order(args, "/home/pat/code/app")).toBeLessThan(order(args, "/home/pat/code/app/.git/hooks"));
    expect(order(args, "/home/pat/.agent-runtime")).toBeLessThan(order(args, "/home/pat/.agent-runtime/worktrees/w1"));
    // The data folder can be passed through to what is shown inside it, not listed; a plain secret not even that.
    expect(args.slice(order(args, "/home/pat/.agent-runtime") - 3, order(args, "/home/pat/.agent-runtime"))).toEqual(["--perms", "0111", "--tmpfs"]);
    expect(args.slice(order(args, "/home/pat/.ssh") - 3, order(args, "/home/pat/.ssh"))).toEqual(["--perms", "0000", "--tmpfs"]);
    expect(args).toContain("--ro-bind");
    expect(args).not.toContain("--unshare-net");
    expect(args).not.toContain("--cap-drop");
  });

  it("writes nothing but temp under read-only, drops root's capabilities, and unshares the network unless open", () => {
    const args = bwrapArgs(spec("read-only", "none"), paths, "agent", [], true);
    expect(args).not.toContain("--bind-try");
    expect(args).toContain("--unshare-net");
    expect(args.slice(args.indexOf("--cap-drop"), args.indexOf("--cap-drop") + 2)).toEqual(["--cap-drop", "ALL"]);
    const full = bwrapArgs(spec("full", "allowlist", ["github.com"]), { ...paths, proxySocket: "/tmp/x/egress.sock" }, "agent", [], false);
    expect(full.slice(full.indexOf("--bind"), full.indexOf("--bind") + 3)).toEqual(["--bind", "/", "/"]);
    expect(full).toContain("--unshare-net");
    expect(full.join(" ")).toContain("socat TCP-LISTEN:3128");
  });
});

describe("the egress proxy", () => {
  const dir = mkdtempSync(join(tmpdir(), "egress-"));
  const servers: Server[] = [];
  afterAll(() => {
    for (const s of servers) s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("tunnels CONNECT to a listed port, refuses another with 403 and reports it, forwards plain HTTP", async () => {
    const port = await new Promise<number>((ok) => {
      const server = createServer((_req, res) => res.end("upstream")).listen(0, "127.0.0.1", () => ok((server.address() as { port: number }).port));
      servers.push(server);
    });
    const blocked: BlockedConnection[] = [];
    const proxy = new EgressProxy({ mode: "allowlist", allow: [`127.0.0.1:${port}`] }, (b) => blocked.push(b));
    const socketPath = join(dir, "proxy.sock");
    await proxy.listen(socketPath);
    try {
      const tunnel = (target: string) =>
        new Promise<string>((ok) => {
          const socket = connect(socketPath, () => socket.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n\r\n`));
          let got = "";
          socket.on("data", (d) => {
            got += d.toString();
            if (got.includes("\r\n\r\n") && got.startsWith("HTTP/1.1 200")) {
              socket.write(`GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
            }
          });
          socket.on("close", () => ok(got));
        });
      expect(await tunnel(`127.0.0.1:${port}`)).toMatch(/^HTTP\/1.1 200 Connection Established[\s\S]*upstream$/);
      expect(await tunnel("127.0.0.1:9")).toMatch(/^HTTP\/1.1 403 Forbidden[\s\S]*not on this sandbox's allowlist/);
      expect(blocked).toEqual([{ host: "127.0.0.1", port: 9, method: "CONNECT", reason: "127.0.0.1:9 is not on this sandbox's allowlist" }]);
      const plain = await new Promise<{ status: number; body: string }>((ok) => {
        const req = request({ socketPath, method: "GET", path: `http://127.0.0.1:${port}/x` }, (res) => {
          let body = "";
          res.on("data", (d) => (body += d));
          res.on("end", () => ok({ status: res.statusCode ?? 0, body }));
        });
        req.end();
      });
      expect(plain).toEqual({ status: 200, body: "upstream" });
    } finally {
      await proxy.close(socketPath);
    }
  });
});
