/** The tunnel's file operations: listing, reading in pieces, uploads staged piece by piece then committed. */
import { z } from "zod";
import { FsActionResponse, FsEntry, FsMoveResponse, FsStat, FsUploadBatchResponse, FsWriteResponse, MachinePath } from "../files";
import { LIMITS } from "../limits";
import { Bytes, MINUTE, type OpDefinition } from "./define";

/** An upload staged on the machine: named by the worker, used as a file name there, so plain. */
const UploadId = z.string().regex(/^[A-Za-z0-9-]{8,64}$/);
/** The last piece of an upload, sent with the call that uses it (commit, unpack). */
const LastPiece = z.object({ upload: UploadId, offset: z.number().int().min(0), bytes: Bytes });

/** A piece of a file read through the tunnel: its bytes (a binary frame's payload), and what the file was when read. */
export const FileChunk = z.object({ path: z.string(), size: z.number().int().min(0), mtimeMs: z.number(), bytes: Bytes });
export type FileChunk = z.infer<typeof FileChunk>;

/** One piece of a file (1 MiB) to or from the machine; unpacking a staged archive. */
const FILE_PIECE_MS = 120_000;

/** A path that is not there, or that the machine's user may not read or write. */
const FS_PROBLEMS = ["not_found", "permission_denied"] as const;

export const FILE_OPS = {
  "fs.entries": {
    deadlineMs: MINUTE,
    readOnly: true,
    problems: FS_PROBLEMS,
    args: z.object({ path: MachinePath.optional() }),
    result: z.object({ entries: z.array(FsEntry), truncated: z.boolean() }),
  },
  "fs.stat": { deadlineMs: MINUTE, readOnly: true, problems: FS_PROBLEMS, args: z.object({ path: MachinePath }), result: FsStat },
  "fs.mkdir": { deadlineMs: MINUTE, problems: FS_PROBLEMS, args: z.object({ path: MachinePath }), result: FsActionResponse },
  "fs.delete": { deadlineMs: MINUTE, problems: FS_PROBLEMS, args: z.object({ path: MachinePath, recursive: z.boolean() }), result: FsActionResponse },
  "fs.move": {
    deadlineMs: MINUTE,
    problems: FS_PROBLEMS,
    args: z.object({ from: MachinePath, to: MachinePath, overwrite: z.boolean() }),
    result: FsMoveResponse,
  },
  /** One piece of a file. `expect`: the size and mtime the first piece saw; a file changed since is refused (409), never spliced. */
  "fs.read": {
    deadlineMs: FILE_PIECE_MS,
    readOnly: true,
    problems: FS_PROBLEMS,
    args: z.object({
      path: MachinePath,
      offset: z.number().int().min(0),
      length: z.number().int().min(1).max(LIMITS.fileChunkBytes),
      expect: z.object({ size: z.number().int(), mtimeMs: z.number() }).optional(),
    }),
    result: FileChunk,
  },
  /** Uploads are staged on the machine piece by piece (at `offset`, in order), then committed or unpacked whole. */
  "fs.upload": {
    deadlineMs: FILE_PIECE_MS,
    args: z.object({ upload: UploadId, offset: z.number().int().min(0), bytes: Bytes }),
    result: z.object({ received: z.number().int() }),
  },
  /** The upload's last piece (`offset`, `bytes`) comes with its commit: a file of one piece is one call. */
  "fs.commit": { deadlineMs: FILE_PIECE_MS, problems: FS_PROBLEMS, args: LastPiece.extend({ path: MachinePath }), result: FsWriteResponse },
  "fs.unpack": { deadlineMs: FILE_PIECE_MS, problems: FS_PROBLEMS, args: LastPiece.extend({ path: MachinePath }), result: FsUploadBatchResponse },
  "fs.abort": { deadlineMs: MINUTE, args: z.object({ upload: UploadId }), result: z.object({ aborted: z.boolean() }) },
} as const satisfies Record<string, OpDefinition>;
