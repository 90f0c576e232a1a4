/**
 * Previews of an app an agent serves inside its sandbox (docs/architecture.md, "Sandboxes"): with a
 * network namespace of its own, the agent's `npm run dev` listens on the sandbox's loopback, not the
 * machine's. A socat inside listens on a unix socket in a folder shared with the sidecar; the preview
 * proxy, finding nothing on the machine's loopback, asks which sandbox listens on the port (its process's
 * /proc/<pid>/net/tcp) and connects through that socket, the port on the first line.
 */
import { readFile } from "node:fs/promises";
import { connect, type Socket } from "node:net";

/** The first child of `pid` (bwrap's inner process, inside the namespaces), or null. */
export async function firstChild(pid: number): Promise<number | null> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, "utf8").catch(() => "");
  const first = Number(text.trim().split(/\s+/)[0]);
  return Number.isInteger(first) && first > 0 ? first : null;
}

/** Does a socket listen on `port` in the network namespace of `pid` (IPv4 or IPv6)? */
export async function listensIn(pid: number, port: number): Promise<boolean> {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  for (const table of ["tcp", "tcp6"]) {
    const text = await readFile(`/proc/${pid}/net/${table}`, "utf8").catch(() => "");
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[3] === "0A" && fields[1]?.endsWith(`:${hex}`)) return true;
    }
  }
  return false;
}

/** A connection to `port` on the sandbox's loopback, through its ingress socket. */
export function connectInside(socketPath: string, port: number): Socket {
  const socket = connect(socketPath);
  socket.write(`${port}\n`);
  return socket;
}
