import { describe, expect, it } from "vitest";
import { ApiError, must, refusal } from "./api";

describe("must", () => {
  it("gives a success's data", async () => {
    const answer = { data: { id: "s1" }, response: new Response("{}", { status: 200 }) };
    await expect(must(Promise.resolve(answer))).resolves.toEqual({ id: "s1" });
  });

  it("turns a refusal into an ApiError carrying the problem's detail, type and extensions", async () => {
    const problem = { type: "urn:agent-runtime:error:conflict", title: "conflict", status: 409, detail: "2 files changed since", files: ["a", "b"] };
    const refused = must(Promise.resolve({ error: problem, response: new Response(null, { status: 409 }) }));
    const err = await refused.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 409, message: "2 files changed since", type: problem.type, problem });
  });

  it("says the status when the refusal is not a problem document", async () => {
    const err = await must(Promise.resolve({ error: "Bad Gateway", response: new Response(null, { status: 502 }) })).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 502, message: "HTTP 502", type: null, problem: null });
  });

  it("refuses a call whose refusal had no body (openapi-fetch's `error` is undefined then): the status decides", async () => {
    const err = await must(Promise.resolve({ error: undefined, response: new Response(null, { status: 404 }) })).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 404, message: "HTTP 404", problem: null });
  });
});

describe("refusal", () => {
  it("reads a refused answer's problem: its detail and extensions", async () => {
    const problem = { type: "urn:agent-runtime:error:invalid_request", title: "Invalid request", status: 400, detail: "body: url: Invalid URL", errors: [] };
    const err = await refusal(new Response(JSON.stringify(problem), { status: 400, headers: { "content-type": "application/problem+json" } }));
    expect(err).toMatchObject({ status: 400, message: "body: url: Invalid URL", type: problem.type, problem });
  });

  it("says the status when the body is not a problem (text, nothing, a JSON list)", async () => {
    for (const body of ["upstream went away", null, "[1,2]"]) {
      const err = await refusal(new Response(body, { status: 502 }));
      expect(err).toMatchObject({ status: 502, message: "HTTP 502", type: null, problem: null });
    }
  });
});
