import { spawn } from "node:child_process";
import { once } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { listeningPorts, parseProcNet } from "./listening-ports";

const children: ReturnType<typeof spawn>[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

describe("listening ports", () => {
  it("reads /proc's tables: listening sockets only, addresses in the order people write them", () => {
    const tcp = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 0100007F:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0",
      "   1: 0100007F:8B2A 0100007F:1435 01 00000000:00000000 00:00000000 00000000     0        0 4243 1 0000000000000000 20 4 30 10 -1",
    ].join("\n");
    expect(parseProcNet(tcp, 4)).toEqual([{ port: 5173, address: "127.0.0.1", inode: "4242" }]);
    const tcp6 = [
      "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 77 1 0000000000000000 100 0 0 10 0",
      "   1: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 78 1 0000000000000000 100 0 0 10 0",
    ].join("\n");
    expect(parseProcNet(tcp6, 6)).toEqual([
      { port: 8080, address: "::1", inode: "77" },
      { port: 3000, address: "::", inode: "78" },
    ]);
  });

  it("finds a server a child of the runtime started, with its process and owner", async () => {
    const child = spawn(
      process.execPath,
      ["-e", "require('node:http').createServer().listen(0, '127.0.0.1', function () { console.log(this.address().port) })"],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    children.push(child);
    const [line] = (await once(child.stdout!, "data")) as [Buffer];
    const port = Number(line.toString().trim());
    const ports = await listeningPorts(new Map([[process.pid, { kind: "sidecar" as const }]]), (p) => p === port);
    const found = ports.find((p) => p.port === port);
    expect(found).toMatchObject({ port, addresses: ["127.0.0.1"], pid: child.pid, owner: { kind: "sidecar" }, allowed: true });
    expect(found?.command).toContain("createServer"); // a child of the runtime: its whole command line
    expect(ports.filter((p) => p.port !== port).every((p) => !p.allowed)).toBe(true);
    // Not the runtime's: the program's name only.
    const unowned = await listeningPorts(new Map(), () => false);
    expect(unowned.find((p) => p.port === port)?.command).toBe("node");
  });
});
