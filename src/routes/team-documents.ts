/**
 * The team's documents, skills, MCP servers and agents (docs/architecture.md, "Team configuration"),
 * served alike:
 *
 *   GET/PUT /config/{kind}            the team's document (ETag, If-Match); every machine applies it
 *   GET     /config/{kind}/status     per machine: what it applied, when, and what went wrong
 *   GET/PUT/DELETE /config/{kind}?directory=&{name}=   one named entry for one folder of one machine,
 *                                     as the sandbox-agent SDK calls them (skills and MCP only)
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { z } from "zod";
import { teamStub } from "../durable/stubs";
import { documentEtag, type DocumentKind, type TeamDocuments } from "../durable/config/team-documents";
import type { AppEnv } from "../env";
import { apiRoute } from "../http/api-route";
import { json, MACHINE_ERRORS } from "../http/openapi";
import { problem } from "../lib/problem-response";
import { parseJsonBody } from "../http/validation";
import { ProblemError } from "@agent-runtime/protocol/problems";
import { MachinePath } from "@agent-runtime/protocol/files";

/** A document is a short list of sources or servers; anything bigger is a mistake. */
export const MAX_DOCUMENT_BYTES = 64 * 1024;

const EtagHeader = { ETag: { schema: { type: "string" as const }, description: "version of the document, for If-Match" } };

export interface DocumentSpec<K extends DocumentKind, Entry extends z.ZodType> {
  kind: K;
  /** "skills configuration", "MCP servers": for summaries and errors. */
  title: string;
  /** The document's schema: a named component (`.meta({ id })`), as the entry's is. */
  document: z.ZodType<TeamDocuments[K]["config"]>;
  status: z.ZodType;
  /** Named entries per folder of one machine, beside the team's document (skills and MCP servers have them). */
  perDirectory?: {
    /** The query parameter naming an entry (`skillName`, `mcpName`) and its schema. */
    nameParam: string;
    name: z.ZodType<string>;
    entry: Entry;
    /** Per-directory entries live on the machine: these reach it through the tunnel. */
    get(c: Context<AppEnv>, directory: string, name: string): Promise<z.output<Entry>>;
    put(c: Context<AppEnv>, directory: string, name: string, value: z.output<Entry>): Promise<void>;
    delete(c: Context<AppEnv>, directory: string, name: string): Promise<void>;
  };
}

/** A reference to the OpenAPI component a schema is declared as (its `.meta({ id })`), where a body names two by reference. */
function componentRef(schema: z.ZodType): { $ref: string } {
  const id = schema.meta()?.id;
  if (!id) throw new Error("a team document's schema, and its entry's, must be a named component (.meta({ id }))");
  return { $ref: `#/components/schemas/${id}` };
}

export function teamDocumentRoutes<K extends DocumentKind, Entry extends z.ZodType>(spec: DocumentSpec<K, Entry>) {
  const path = `/config/${spec.kind}`;
  const entries = spec.perDirectory;
  // Built per kind, so typed here by their shape (the name parameter differs: skillName, mcpName).
  const entryQuery: z.ZodObject<Record<string, z.ZodType<string>>> | null = entries
    ? z.object({ directory: MachinePath.describe("a folder on the machine"), [entries.nameParam]: entries.name })
    : null;
  const optionalEntryQuery: z.ZodObject<Record<string, z.ZodType<string | undefined>>> | null = entryQuery?.partial() ?? null;
  const query = optionalEntryQuery ? { query: optionalEntryQuery } : {};
  // Which of the two a PUT carries depends on its query: the handler parses it (parseJsonBody); the
  // document names both, by reference to their schemas.
  const body = entries ? { oneOf: [componentRef(spec.document), componentRef(entries.entry)] } : componentRef(spec.document);
  const onMachine = { role: "member", machine: true } as const;
  /** What a summary adds for the per-folder form, where there is one. */
  const andEntry = (what: string) => (entries ? `; with directory and ${entries.nameParam}, ${what}` : "");

  const read = apiRoute("get", path, {
    summary: `The team's ${spec.title}${andEntry("that folder's entry on the machine")}`,
    access: { role: "viewer", machine: false, ...(entries ? { withDirectory: { role: "viewer", machine: true } as const } : {}) },
    request: query,
    answers: {
      200: {
        description: entries ? "the document (empty until one is set), or the entry" : "the document (empty until one is set)",
        content: { "application/json": { schema: entries ? z.union([spec.document, entries.entry]) : spec.document } },
        headers: EtagHeader,
      },
    },
    problems: [...MACHINE_ERRORS, "not_found"],
  });

  const write = apiRoute("put", path, {
    summary: `Replace the team's ${spec.title} (every connected machine applies it)${andEntry("set that folder's entry on the machine")}`,
    // The team's document reaches every machine: only a token that reaches every machine replaces it.
    access: { role: "admin", machine: false, everyMachine: true, ...(entries ? { withDirectory: onMachine } : {}) },
    request: {
      ...query,
      headers: z.object({ "if-match": z.string().max(256).optional().describe("the ETag you read; 412 if it changed since") }),
      body: { required: true, content: { "application/json": { schema: body } } },
    },
    answers: {
      200: { ...json(spec.document, "the stored document"), headers: EtagHeader },
      ...(entries ? { 204: { description: "the folder's entry is stored" } } : {}),
    },
    problems: [...MACHINE_ERRORS, "not_found", "precondition_failed", "payload_too_large"],
  });

  const status = apiRoute("get", `${path}/status`, {
    summary: `Per machine: the ${spec.title} version it applied, when, what it did and any error`,
    access: { role: "viewer", machine: false },
    answers: { 200: json(z.object({ version: z.string(), machines: z.array(spec.status) }), "status") },
  });

  /** The entry the query names, or null for the team's document; half a query is a mistake, said as such. */
  const entryOf = (query: Record<string, string | undefined>): { directory: string; name: string } | null => {
    if (!entries) return null;
    const directory = query.directory;
    const name = query[entries.nameParam];
    if (directory === undefined && name === undefined) return null;
    if (directory === undefined || name === undefined) throw new ProblemError("invalid_request", `give both directory and ${entries.nameParam}, or neither`);
    return { directory, name };
  };
  const queryOf = (c: Context<AppEnv>): Record<string, string | undefined> => (entries ? c.req.query() : {});

  const routes = new OpenAPIHono<AppEnv>();
  routes.use(
    path,
    bodyLimit({ maxSize: MAX_DOCUMENT_BYTES, onError: () => problem("payload_too_large", `a ${spec.title} document is at most ${MAX_DOCUMENT_BYTES} bytes`) }),
  );
  routes
    .openapi(read, async function readDocument(c) {
      const entry = entryOf(queryOf(c));
      if (entries && entry) return c.json(await entries.get(c, entry.directory, entry.name), 200);
      const stored = (await teamStub(c.env).getDocuments())[spec.kind];
      return c.json(stored.config, 200, { ETag: documentEtag(stored.version) });
    })
    .openapi(write, async function writeDocument(c) {
      const entry = entryOf(queryOf(c));
      if (entries && entry) {
        await entries.put(c, entry.directory, entry.name, await parseJsonBody(c, entries.entry));
        return c.body(null, 204);
      }
      const document = await parseJsonBody(c, spec.document);
      const ifMatch = c.req.valid("header")["if-match"] ?? null;
      const { ok, stored } = await teamStub(c.env).putDocument(spec.kind, document, ifMatch);
      const etag = documentEtag(stored.version);
      if (!ok) throw new ProblemError("precondition_failed", `the document changed since you read it: it is now version ${etag}`, { etag });
      return c.json(stored.config, 200, { ETag: etag });
    })
    .openapi(status, async function readDocumentStatus(c) {
      const team = teamStub(c.env);
      const [documents, machines] = await Promise.all([team.getDocuments(), team.documentStatus(spec.kind)]);
      return c.json({ version: documentEtag(documents[spec.kind].version), machines }, 200);
    });
  if (entries && entryQuery) {
    const remove = apiRoute("delete", path, {
      summary: `Delete a folder's ${spec.title} entry on the machine (the team's document is replaced, not deleted)`,
      access: onMachine,
      request: { query: entryQuery },
      answers: { 204: { description: "deleted (or was not there)" } },
      problems: MACHINE_ERRORS,
    });
    routes.openapi(remove, async function removeDocument(c) {
      const entry = entryOf(c.req.valid("query"));
      if (!entry) throw new ProblemError("invalid_request", `give directory and ${entries.nameParam}`);
      await entries.delete(c, entry.directory, entry.name);
      return c.body(null, 204);
    });
  }
  return routes;
}
