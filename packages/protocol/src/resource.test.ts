import { describe, expect, it } from "vitest";
import { z } from "zod";
import { resource, strictResource } from "./resource";

// The helpers must declare exactly what the chains they replaced did: the same parse, the same component.
const Fields = { name: z.string(), size: z.number().int().optional().describe("in bytes") };

describe("resource", () => {
  it("drops a field it does not know, as z.object does", () => {
    const Thing = resource("ResourceTestThing", Fields);
    expect(Thing.parse({ name: "a", extra: 1 })).toEqual({ name: "a" });
    expect(Thing.safeParse({ size: 1 }).success).toBe(false);
  });

  it("refuses a field it does not know when strict", () => {
    const Thing = strictResource("ResourceTestStrict", Fields);
    expect(Thing.safeParse({ name: "a" }).success).toBe(true);
    const refused = Thing.safeParse({ name: "a", extra: 1 });
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.code).toBe("unrecognized_keys");
  });

  it("registers the component under its id, with the JSON Schema of the chain it replaces", () => {
    const Thing = resource("ResourceTestOne", Fields);
    const Strict = strictResource("ResourceTestTwo", Fields);
    expect(Thing.meta()).toEqual({ id: "ResourceTestOne" });
    const holder = z.object({ thing: Thing, strict: Strict });
    const byHand = z.object({
      thing: z.object(Fields).meta({ id: "ResourceTestOne" }),
      strict: z.object(Fields).strict().meta({ id: "ResourceTestTwo" }),
    });
    const schema = z.toJSONSchema(holder, { reused: "ref" });
    expect(schema).toEqual(z.toJSONSchema(byHand, { reused: "ref" }));
    expect(schema.properties?.thing).toEqual({ $ref: "#/$defs/ResourceTestOne" });
    expect(schema.$defs?.ResourceTestTwo).toMatchObject({ additionalProperties: false, required: ["name"] });
    // What a client may send: only the strict one refuses more.
    const input = z.toJSONSchema(holder, { reused: "ref", io: "input" });
    expect(input).toEqual(z.toJSONSchema(byHand, { reused: "ref", io: "input" }));
    expect(input.$defs?.ResourceTestOne).not.toHaveProperty("additionalProperties");
    expect(input.$defs?.ResourceTestTwo).toMatchObject({ additionalProperties: false });
  });
});
