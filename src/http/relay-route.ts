/**
 * A route that only hands a request to a tunnel operation, declared once (docs/architecture.md, "A new
 * relay route"): from its method, path, access (role and machine scope), operation, how the operation's
 * arguments are read from the path, query and body, and its success status, `relayRoute` makes the
 * OpenAPI entry (through `apiRoute`, http/api-route.ts: the access `declare` adds, the errors every such
 * route answers and those the operation says it raises), the access check, the validation and the handler. The audit needs nothing here: every mutating call is audited by the v1
 * app's middleware (http/audit.ts), whatever made the route.
 */
import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import type { AppEnv } from "../env";
import type { Access } from "./access";
import { apiRoute } from "./api-route";
import { relay } from "./machine";
import { json, jsonBody, MACHINE_ERRORS } from "./openapi";
import { OPS, type OpArgs, type OpName, type OpResult, parseOpArgs } from "@agent-runtime/protocol/ops";
import type { OpDefinition } from "@agent-runtime/protocol/ops/define";
import { type ProblemCode, ProblemError } from "@agent-runtime/protocol/problems";

/** What a route reads, once validated: its path parameters, its query and its JSON body (`{}` where it declares none). */
export interface RelayInput<P extends z.ZodObject, Q extends z.ZodObject, B extends z.ZodType> {
  param: z.output<P>;
  query: z.output<Q>;
  json: z.output<B>;
}

/**
 * The route's answer on success: a JSON body with `status`, or 204 and no body. The body's schema is the
 * operation's result unless the route answers with something else (`schema`, with `reply` to make it).
 */
type Answer<S extends z.ZodType> = { status: 200 | 201; schema?: S; description: string } | { status: 204; description: string };

interface RelaySpec<N extends OpName, P extends z.ZodObject, Q extends z.ZodObject, B extends z.ZodType, S extends z.ZodType> {
  summary: string;
  access: Access;
  op: N;
  params?: P;
  query?: Q;
  /** A JSON body (415 for another media type, declared with the operation's errors); `bodyOptional`: it may be absent (read as `{}`). */
  body?: B;
  bodyOptional?: true;
  /**
   * The operation's arguments from what the request carries (a session's record, say, may be looked up
   * first). Without it, the path's parameters, the query and the body together, read through the
   * operation's own schema: a route may leave it out only where what it reads has the arguments' type.
   * The compiler checks the types fit, not that the operation takes every field the route reads: a route
   * that reads a field its (strict) operation refuses, as a filter applied in `reply`, gives its own `args`.
   */
  args?: (input: RelayInput<P, Q, B>, c: Context<AppEnv>) => OpArgs<N> | Promise<OpArgs<N>>;
  answer: Answer<S>;
  /** The body of the answer from the operation's result, where it is not the result itself. */
  reply?: (result: OpResult<N>, input: RelayInput<P, Q, B>) => z.input<S>;
  /** Headers of the answer, from the operation's result. */
  headers?: (result: OpResult<N>) => Record<string, string>;
  /** How long to wait for the machine when the operation's own deadline is not the right one (a run waits for its command). */
  timeoutMs?: (input: RelayInput<P, Q, B>) => number;
  /** Problems the route itself may answer besides the machine's and the operation's (a body over the worker's limit). */
  errors?: readonly ProblemCode[];
}

/** One relay route, ready to be added to a group of routes (`relayRoutes`). */
export interface RelayRoute {
  readonly route: RouteConfig;
  addTo(app: OpenAPIHono<AppEnv>): void;
}

/** The problems a route answering with `op`'s result declares: the machine's (offline, timeout, …), then the operation's own. */
export function opProblems(op: OpName): ProblemCode[] {
  return [...MACHINE_ERRORS, ...problemsOf(op)];
}

function problemsOf(op: OpName): readonly ProblemCode[] {
  const definition: OpDefinition = OPS[op];
  return definition.problems ?? [];
}

const Nothing = z.object({});

export function relayRoute<
  N extends OpName,
  S extends z.ZodType = z.ZodType<unknown, OpResult<N>>,
  P extends z.ZodObject = typeof Nothing,
  Q extends z.ZodObject = typeof Nothing,
  B extends z.ZodType = typeof Nothing,
>(
  method: "get" | "post" | "put" | "delete",
  /** Relative to `/v1`, with `{name}` parameters, as the OpenAPI document writes it. */
  path: string,
  spec: RelaySpec<N, P, Q, B, S> &
    ([OpResult<N>] extends [z.input<S>] ? unknown : { reply: RelaySpec<N, P, Q, B, S>["reply"] }) &
    ([z.output<P> & z.output<Q> & z.output<B>] extends [OpArgs<N>] ? unknown : { args: NonNullable<RelaySpec<N, P, Q, B, S>["args"]> }),
): RelayRoute {
  const { answer } = spec;
  const body = spec.body ? (spec.bodyOptional ? { ...jsonBody(spec.body), required: false } : jsonBody(spec.body)) : undefined;
  const request = {
    ...(spec.params ? { params: spec.params } : {}),
    ...(spec.query ? { query: spec.query } : {}),
    ...(body ? { body } : {}),
  };
  // The declaration as every route's (http/api-route.ts): a JSON body's 415 and a machine's 404 come from its table.
  const route: RouteConfig = apiRoute(method, path, {
    summary: spec.summary,
    access: spec.access,
    request,
    answers: { [answer.status]: answer.status === 204 ? { description: answer.description } : json(answer.schema ?? OPS[spec.op].result, answer.description) },
    problems: [...opProblems(spec.op), ...(spec.errors ?? [])],
  });
  type In = RelayInput<P, Q, B>;
  async function relayToMachine(c: Context<AppEnv, string, { out: In }>): Promise<Response> {
    const input: In = { param: c.req.valid("param"), query: c.req.valid("query"), json: c.req.valid("json") };
    const args = spec.args ? await spec.args(input, c) : wholeInput(spec.op, input);
    const result = await relay(c, spec.op, args, spec.timeoutMs?.(input));
    if (answer.status === 204) return c.body(null, 204);
    return c.json(spec.reply ? spec.reply(result, input) : result, answer.status, spec.headers?.(result) ?? {});
  }
  return {
    route,
    addTo(app) {
      app.openapi<RouteConfig, { out: In }>(route, relayToMachine);
    },
  };
}

/**
 * A route's parameters, query and body together as `op`'s arguments, parsed against its schema (as the
 * sidecar will). Where two name the same field, the path wins, then the query: what the URL names (and
 * what an audit line or a log shows of the call) is what the operation acts on, never a body's field.
 */
export function wholeInput<N extends OpName>(op: N, { param, query, json }: { param: unknown; query: unknown; json: unknown }): OpArgs<N> {
  const parsed = parseOpArgs(op, Object.assign({}, json, query, param));
  if (!parsed.ok) throw new ProblemError("invalid_request", parsed.error);
  return parsed.args;
}

/** Adds relay routes to a group, in their order (a fixed path before a parameter that would take it). */
export function withRelayRoutes(app: OpenAPIHono<AppEnv>, routes: readonly RelayRoute[]): OpenAPIHono<AppEnv> {
  for (const route of routes) route.addTo(app);
  return app;
}
