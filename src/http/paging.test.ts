import { describe, expect, it } from "vitest";
import { mergePages, pageAcross, pageQuery, readCursor } from "./paging";

const at = (r: { atMs: number }) => r.atMs;

describe("a list across machines", () => {
  it("merges the machines' pages newest first (ties by id, descending), cut to the limit, with the cursor of the last kept", () => {
    const a = [
      { id: "a2", atMs: 30 },
      { id: "a1", atMs: 10 },
    ];
    const b = [
      { id: "b2", atMs: 30 },
      { id: "b1", atMs: 20 },
    ];
    const page = mergePages([a, b], false, at, 3);
    expect(page.items.map((r) => r.id)).toEqual(["b2", "a2", "b1"]);
    expect(page.nextCursor).toBe("20.b1");
    expect(readCursor(page.nextCursor ?? undefined)).toEqual({ atMs: 20, id: "b1" });
  });

  it("has no next page when every record fits and no machine has more; one when a machine says it has more", () => {
    const rows = [[{ id: "x", atMs: 1 }], []];
    expect(mergePages(rows, false, at, 5)).toEqual({ items: [{ id: "x", atMs: 1 }], nextCursor: null });
    expect(mergePages(rows, true, at, 5).nextCursor).toBe("1.x");
    expect(mergePages([[], []], true, at, 5).nextCursor).toBeNull();
    expect(readCursor(undefined)).toBeNull();
    // An id may hold dots after the first: only the first one separates the time.
    expect(readCursor("5.ses-0123456789abcdef-my.machine")).toEqual({ atMs: 5, id: "ses-0123456789abcdef-my.machine" });
  });

  it("asks each machine for its page and merges them; its query takes the cursor a page gave and refuses another form", async () => {
    const asked: string[] = [];
    const ask = async (machine: string) => {
      asked.push(machine);
      return { records: [{ id: `ses-0123456789abcdef-${machine}`, atMs: machine.length }], more: machine === "laptop" };
    };
    const page = await pageAcross(["pi", "laptop"], 1, { ask, itemsOf: (p) => p.records, at: (r) => r.atMs });
    expect(asked.sort()).toEqual(["laptop", "pi"]);
    expect(page).toEqual({ items: [{ id: "ses-0123456789abcdef-laptop", atMs: 6 }], nextCursor: "6.ses-0123456789abcdef-laptop" });
    const query = pageQuery("sessions", "ses");
    expect(query.parse({ cursor: page.nextCursor, limit: "20" })).toEqual({ cursor: page.nextCursor, limit: 20 });
    expect(query.safeParse({ cursor: "6.task-0123456789abcdef-laptop" }).success).toBe(false);
  });
});
