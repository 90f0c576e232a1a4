/**
 * A route's declaration in one call (docs/architecture.md, "A new route"): its method and path, then its
 * summary, its access (role and machine scope), what it reads, its answers and the problems only it
 * answers. The problems every route of that kind answers come from one table (`answeredProblems`): 401
 * and 403 for every route, 400 for one that reads a path, query, header or body, 415 for a JSON body,
 * and a machine's 400 and 404 (a malformed or never-connected machine) for one that acts on a machine;
 * `errors` turns the codes into responses by the statuses of protocol/problems. The result is what
 * `createRoute(declare(access, …))` makes: the handler is written beside it, typed by it, as before.
 */
import { createRoute, type RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { ProblemCode } from "@agent-runtime/protocol/problems";
import type { AppEnv } from "../env";
import { type Access, declare } from "./access";
import { errors } from "./openapi";

type Method = "get" | "post" | "put" | "patch" | "delete";
type RouteRequest = NonNullable<RouteConfig["request"]>;
type Answers = RouteConfig["responses"];

export interface ApiSpec<A extends Answers> {
  summary: string;
  description?: string;
  access: Access;
  /** The success answers by status (`{ 200: json(Schema, "…") }`); the errors are added from the problems. */
  answers: A;
  /** The problems this route answers beyond those every route of its kind does (`answeredProblems`). */
  problems?: readonly ProblemCode[];
}

/** The route `createRoute(declare(…))` makes, typed by what it reads and answers. */
export type ApiRoute<M extends Method, P extends string, Req extends RouteRequest, A extends Answers> = {
  method: M;
  path: P;
  summary: string;
  request: Req;
  /** Typed by its success answers, what a handler returns: its errors are thrown (ProblemError), never returned. */
  responses: A;
  middleware: MiddlewareHandler<AppEnv>;
  getRoutingPath(): string;
};

/** The problems a route answers by what it is, before its own (the guard's and the validation's). */
export function answeredProblems(access: Access, request: RouteRequest | undefined): ProblemCode[] {
  const reads = request !== undefined && (request.params ?? request.query ?? request.headers ?? request.body) !== undefined;
  const jsonBody = request?.body?.content["application/json"] !== undefined;
  // With `withDirectory` a route acts on a machine when it is given a folder: that machine's problems too.
  const machine = access.machine !== false || access.withDirectory !== undefined;
  return [
    ...(reads || machine ? (["invalid_request"] as const) : []),
    ...(machine ? (["not_found"] as const) : []),
    ...(jsonBody ? (["unsupported_media_type"] as const) : []),
  ];
}

// Two signatures, so that a route without input is typed as reading nothing (`{}`) and one with input by
// exactly what it reads: one implementation cannot say both (its `request` would read as a union).
export function apiRoute<M extends Method, P extends string, A extends Answers, Req extends RouteRequest>(
  method: M,
  path: P,
  spec: ApiSpec<A> & { request: Req },
): ApiRoute<M, P, Req, A>;
export function apiRoute<M extends Method, P extends string, A extends Answers>(method: M, path: P, spec: ApiSpec<A>): ApiRoute<M, P, Record<never, never>, A>;
export function apiRoute(method: Method, path: string, spec: ApiSpec<Answers> & { request?: RouteRequest }) {
  const { summary, description, access, request = {}, answers, problems = [] } = spec;
  return createRoute(
    declare(access, {
      method,
      path,
      summary,
      ...(description ? { description } : {}),
      request,
      responses: { ...answers, ...errors(...answeredProblems(access, spec.request), ...problems) },
    }),
  );
}
