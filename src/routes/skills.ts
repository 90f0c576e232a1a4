/** The team's skills configuration: stored once per deployment, pushed to every machine (DESIGN.md §7). */
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { z } from "zod";
import type { AppEnv } from "../env";
import { declare } from "../http/access";
import { teamStub } from "../durable/stubs";
import { skillsEtag } from "../durable/skills-version";
import { errors, json, jsonBody } from "../http/openapi";
import { problem } from "../http/problem";
import { ProblemError } from "../protocol/problems";
import { SkillsConfig, SkillsStatus } from "../protocol/resources";

/** A skills document is a short list of sources; anything bigger is a mistake. */
export const MAX_SKILLS_DOCUMENT_BYTES = 64 * 1024;

const EtagHeader = { ETag: { schema: { type: "string" as const }, description: "version of the configuration, for If-Match" } };

const read = createRoute(
  declare(
    { role: "viewer", machine: false },
    {
      method: "get",
      path: "/config/skills",
      summary: "The team's skills configuration",
      responses: { 200: { ...json(SkillsConfig, "the configuration ({sources: []} until one is set)"), headers: EtagHeader }, ...errors() },
    },
  ),
);

const write = createRoute(
  declare(
    { role: "admin", machine: false },
    {
      method: "put",
      path: "/config/skills",
      summary: "Replace the team's skills configuration; every connected machine applies it",
      request: {
        headers: z.object({ "if-match": z.string().max(256).optional().describe("the ETag you read; 412 if it changed since") }),
        body: jsonBody(SkillsConfig),
      },
      responses: {
        200: { ...json(SkillsConfig, "the stored configuration"), headers: EtagHeader },
        ...errors("invalid_request", "precondition_failed", "payload_too_large", "unsupported_media_type"),
      },
    },
  ),
);

const status = createRoute(
  declare(
    { role: "viewer", machine: false },
    {
      method: "get",
      path: "/config/skills/status",
      summary: "Per machine: the configuration it applied, when, the skills it installed and any error",
      responses: { 200: json(SkillsStatus, "status"), ...errors() },
    },
  ),
);

export const skillsRoutes = new OpenAPIHono<AppEnv>();
skillsRoutes.use(
  "/config/skills",
  bodyLimit({
    maxSize: MAX_SKILLS_DOCUMENT_BYTES,
    onError: () => problem("payload_too_large", `a skills configuration is at most ${MAX_SKILLS_DOCUMENT_BYTES} bytes`),
  }),
);
skillsRoutes
  .openapi(read, async (c) => {
    const stored = await teamStub(c.env).getSkills();
    return c.json(stored.config, 200, { ETag: skillsEtag(stored.version) });
  })
  .openapi(write, async (c) => {
    const ifMatch = c.req.valid("header")["if-match"] ?? null;
    const { ok, stored } = await teamStub(c.env).putSkills(c.req.valid("json"), ifMatch);
    if (!ok) {
      throw new ProblemError("precondition_failed", `the configuration changed since you read it: it is now version ${skillsEtag(stored.version)}`, {
        etag: skillsEtag(stored.version),
      });
    }
    return c.json(stored.config, 200, { ETag: skillsEtag(stored.version) });
  })
  .openapi(status, async (c) => {
    const team = teamStub(c.env);
    const [stored, machines] = await Promise.all([team.getSkills(), team.skillsStatus()]);
    return c.json({ version: skillsEtag(stored.version), machines }, 200);
  });
