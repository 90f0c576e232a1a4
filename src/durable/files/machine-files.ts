/**
 * The machine's files as its object serves them (docs/architecture.md, "Files"): a read streamed back in
 * pieces, a body written over a path in one rename once staged, a tar archive unpacked once staged.
 */
import type { OpResult } from "@agent-runtime/protocol/ops";
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import { withBodyHeadroom } from "@agent-runtime/protocol/frames";
import { fileResponse, type MachineCall, type UploadBody, upload } from "./file-transfer";

export interface FilesHost {
  call: MachineCall;
  /** How many upload pieces the connected sidecar takes before the first is stored. */
  uploadWindow(): number;
  waitUntil(work: Promise<unknown>): void;
}

export class MachineFiles {
  constructor(private readonly host: FilesHost) {}

  read(path: string): Promise<Response> {
    return fileResponse(this.host.call, path, (work) => this.host.waitUntil(work));
  }

  write(path: string, body: UploadBody, declaredBytes: number | null): Promise<Outcome<OpResult<"fs.commit">>> {
    return upload(this.host.call, ownBody(body), declaredBytes, this.host.uploadWindow(), (last) => this.host.call("fs.commit", { ...last, path }));
  }

  unpack(path: string, body: UploadBody, declaredBytes: number | null): Promise<Outcome<OpResult<"fs.unpack">>> {
    return upload(this.host.call, ownBody(body), declaredBytes, this.host.uploadWindow(), (last) => this.host.call("fs.unpack", { ...last, path }));
  }
}

/**
 * A body that came across the RPC is this object's own copy: one read after room for its frame's header
 * (routes/files.ts) is marked so, and framed where it is, not copied after the header.
 */
function ownBody(body: UploadBody): UploadBody {
  return body instanceof Uint8Array ? withBodyHeadroom(body) : body;
}
