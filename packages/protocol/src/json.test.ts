import { describe, expect, it } from "vitest";
import { z } from "zod";
import { jsonAs } from "./json";

describe("jsonAs", () => {
  const Answer = z.object({ id: z.number(), name: z.string().default("none") });

  it("reads JSON text of the shape, as the schema's output", () => {
    expect(jsonAs('{"id": 1}', Answer)).toEqual({ id: 1, name: "none" });
  });

  it("is undefined for text that is not JSON", () => {
    expect(jsonAs("{id: 1", Answer)).toBeUndefined();
    expect(jsonAs("", Answer)).toBeUndefined();
  });

  it("is undefined for JSON of another shape", () => {
    expect(jsonAs('{"id": "1"}', Answer)).toBeUndefined();
    expect(jsonAs("null", Answer)).toBeUndefined();
  });
});
