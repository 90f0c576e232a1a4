import { describe, expect, it } from "vitest";
import { roleAllows, scopeAllows } from "./access";
import { roleForEmail } from "./cf-access";

describe("roles", () => {
  it("rank viewer < member < admin", () => {
    expect(roleAllows("admin", "member")).toBe(true);
    expect(roleAllows("member", "member")).toBe(true);
    expect(roleAllows("member", "admin")).toBe(false);
    expect(roleAllows("viewer", "member")).toBe(false);
    expect(roleAllows("viewer", "viewer")).toBe(true);
  });

  it("scope is every machine or the listed ones exactly", () => {
    expect(scopeAllows("*", "any")).toBe(true);
    expect(scopeAllows(["a", "b"], "a")).toBe(true);
    expect(scopeAllows(["a", "b"], "ab")).toBe(false);
    expect(scopeAllows(["a"], "A")).toBe(false);
  });
});

describe("Cloudflare Access roles by email", () => {
  const rules = "alice@example.com=admin, *@example.com=viewer, carol@other.org=member, broken, x@y.z=root";
  it("prefers the exact email to its domain, case-insensitively", () => {
    expect(roleForEmail(rules, "Alice@Example.com")).toBe("admin");
    expect(roleForEmail(rules, "bob@example.com")).toBe("viewer");
    expect(roleForEmail(rules, "carol@other.org")).toBe("member");
  });
  it("gives nothing to an unlisted email, a look-alike domain, or an unknown role", () => {
    expect(roleForEmail(rules, "mallory@evil.org")).toBeNull();
    expect(roleForEmail(rules, "mallory@notexample.com")).toBeNull();
    expect(roleForEmail(rules, "x@y.z")).toBeNull();
    expect(roleForEmail(undefined, "alice@example.com")).toBeNull();
  });
});
