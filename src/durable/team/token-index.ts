/**
 * The team's index of issued API tokens (docs/architecture.md, "Trust"): for listing and the bound on
 * live tokens only. Whether a token is valid is its own object's word (durable/tokens/token.ts); this
 * index is never on the per-request path.
 */
import { TokenInfo } from "@agent-runtime/protocol/trust";
import { z } from "zod";
import { Count, jsonText, oneRow, rows } from "../storage/stored";

const IndexRow = z.object({ info: jsonText(TokenInfo) });

/** An upper bound on issued tokens, so listing them (one call per token object) stays bounded. */
export const MAX_TOKENS = 1000;

export class TokenIndex {
  constructor(private readonly sql: SqlStorage) {}

  /** False when the team already has MAX_TOKENS live tokens. */
  register(info: TokenInfo): boolean {
    const live = oneRow(this.sql, Count, `SELECT count(*) AS n FROM tokens WHERE json_extract(info, '$.revokedAtMs') IS NULL`).n;
    if (live >= MAX_TOKENS) return false;
    this.sql.exec(`INSERT INTO tokens (id, info) VALUES (?, ?)`, info.id, JSON.stringify(info));
    return true;
  }

  update(info: TokenInfo): void {
    this.sql.exec(`UPDATE tokens SET info = ? WHERE id = ?`, JSON.stringify(info), info.id);
  }

  /** Every issued token, oldest first. */
  list(): TokenInfo[] {
    return rows(this.sql, IndexRow, `SELECT info FROM tokens ORDER BY id`)
      .map((r) => r.info)
      .sort((a, b) => a.createdAtMs - b.createdAtMs);
  }
}
