/**
 * Roles ranked (docs/architecture.md, "Trust"): a role allows what every role below it allows. Kept apart
 * from the schemas (trust.ts) so that the dashboard's first script carries no schema library.
 */
export type RoleName = "viewer" | "member" | "admin";

const ROLE_RANK: Record<RoleName, number> = { viewer: 0, member: 1, admin: 2 };

/** A role named by a string from outside (a form's select), or null when it names none. */
export function roleNamed(name: string): RoleName | null {
  return Object.hasOwn(ROLE_RANK, name) ? (name as RoleName) : null;
}

/** Does a token of role `have` satisfy a route that needs `need`? */
export function roleAllows(have: RoleName, need: RoleName): boolean {
  return ROLE_RANK[have] >= ROLE_RANK[need];
}
