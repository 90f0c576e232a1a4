import { describe, expect, it } from "vitest";
import { answerKey } from "./server-records";

const answer = (id: string | number, result: unknown) => JSON.stringify({ jsonrpc: "2.0", id, result });

describe("answerKey (an initialize answer seen before, told without a parse)", () => {
  it("is the same for the same answer to another request, and differs with what the answer says", () => {
    const caps = { protocolVersion: 1, agentCapabilities: { loadSession: true } };
    expect(answerKey(answer(1, caps), 1)).toBe(answerKey(answer(12, caps), 12));
    expect(answerKey(answer("a", caps), "a")).toBe(answerKey(answer("b-2", caps), "b-2"));
    expect(answerKey(answer(1, caps), 1)).not.toBe(answerKey(answer(2, { ...caps, agentCapabilities: {} }), 2));
    expect(answerKey(answer(1, caps), 1)).not.toContain('"id"');
  });

  it("is null where the id is not written as the runtime writes it (the answer is then read afresh)", () => {
    expect(answerKey('{"jsonrpc":"2.0", "id": 1, "result":{}}', 1)).toBeNull();
    expect(answerKey(answer(1, {}), 2)).toBeNull();
    expect(answerKey(answer(1, {}), undefined)).toBeNull();
    expect(answerKey(answer(1, {}), null)).toBeNull();
  });
});
