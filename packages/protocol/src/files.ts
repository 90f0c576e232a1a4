/**
 * Files on a machine (docs/architecture.md, "Files"; shapes as the sandbox-agent SDK reads them).
 * One zod schema per resource: the worker validates with it, the sidecar builds its answers to its
 * type, and the OpenAPI document is generated from it.
 */
import { z } from "zod";
import { resource } from "./resource";

/**
 * A path on the machine. Absolute by design (the caller is trusted with the machine); a relative path or
 * `~/…` is taken from the sidecar's HOME, as sandbox-agent does. `..` segments are refused: a path must
 * say what it means, not lean on how the machine's links resolve.
 */
export const MachinePath = z
  .string()
  .min(1, "must not be empty")
  .max(4096)
  .refine((v) => !v.includes("\u0000"), "must not contain NUL bytes")
  .refine((v) => !v.split("/").includes(".."), "must not contain '..' segments")
  .describe("a path on the machine: absolute, or relative to the sidecar's HOME");

export const FsEntryType = z.enum(["file", "directory"]).meta({ id: "FsEntryType" });

export const FsStat = resource("FsStat", {
  path: z.string().describe("absolute"),
  entryType: FsEntryType,
  size: z.number().int().min(0),
  modified: z.string().nullable().optional().describe("RFC 3339"),
});
export type FsStat = z.infer<typeof FsStat>;

export const FsEntry = FsStat.extend({ name: z.string() }).meta({ id: "FsEntry" });
export type FsEntry = z.infer<typeof FsEntry>;

export const FsPathQuery = z.object({ path: MachinePath });
export const FsEntriesQuery = z.object({ path: MachinePath.optional().describe("the folder (default: HOME)") });
export const FsDeleteQuery = z.object({
  path: MachinePath,
  recursive: z
    .enum(["true", "false", "1", "0"])
    .optional()
    .transform((v) => v === "true" || v === "1")
    .describe("delete a folder with everything in it"),
});

export const FsActionResponse = resource("FsActionResponse", { path: z.string() });
export const FsWriteResponse = resource("FsWriteResponse", { path: z.string(), bytesWritten: z.number().int().min(0) });
export type FsWriteResponse = z.infer<typeof FsWriteResponse>;

export const FsMoveRequest = resource("FsMoveRequest", {
  from: MachinePath,
  to: MachinePath,
  overwrite: z.boolean().nullable().optional().describe("replace what is at `to` (409 otherwise)"),
});
export const FsMoveResponse = resource("FsMoveResponse", { from: z.string(), to: z.string() });

export const FsUploadBatchResponse = resource("FsUploadBatchResponse", {
  paths: z.array(z.string()).describe("what was written (the first 1,024)"),
  truncated: z.boolean().describe("true when more than 1,024 entries were written"),
});
export type FsUploadBatchResponse = z.infer<typeof FsUploadBatchResponse>;
