import { describe, expect, it } from "vitest";
import { isReadOnly, OPS, type OpName } from "./ops";
import { ACP_OPS } from "./ops/acp";
import { ATTEMPT_OPS } from "./ops/attempts";
import { AGENT_OPS } from "./ops/agents";
import { CONFIG_OPS } from "./ops/config";
import { FILE_OPS } from "./ops/files";
import { LOGIN_OPS } from "./ops/logins";
import { PORT_OPS } from "./ops/ports";
import { PROCESS_OPS } from "./ops/processes";
import { REVIEW_OPS } from "./ops/review";

describe("the operation table", () => {
  it("is every feature's operations, none declared by two features (a spread would silently keep one)", () => {
    const features = [ACP_OPS, AGENT_OPS, PROCESS_OPS, CONFIG_OPS, FILE_OPS, REVIEW_OPS, PORT_OPS, ATTEMPT_OPS, LOGIN_OPS];
    const names = features.flatMap((table) => Object.keys(table));
    expect(new Set(names).size).toBe(names.length);
    expect(names.sort()).toEqual(Object.keys(OPS).sort());
  });

  it("marks read-only exactly the operations that change nothing, whose answers are not remembered", () => {
    const readOnly = (Object.keys(OPS) as OpName[]).filter(isReadOnly).sort();
    expect(readOnly).toEqual(
      [
        "acp.discover",
        "acp.list",
        "agents.get",
        "agents.list",
        "checkpoints.changes",
        "checkpoints.diff",
        "fs.entries",
        "fs.read",
        "fs.stat",
        "mcp.entry.get",
        "processes.config.get",
        "processes.get",
        "processes.list",
        "processes.logs",
        "skills.entry.get",
        "git.status",
        "worktrees.list",
        "ports.list",
        "attempts.base",
        "attempts.diff",
        "logins.get",
      ].sort(),
    );
    // What changes the machine is remembered, so a call re-sent after a reconnect is never run twice.
    for (const op of [
      "acp.post",
      "processes.spawn",
      "fs.commit",
      "fs.upload",
      "agents.install",
      "checkpoints.revert",
      "git.commit",
      "git.push",
      "attempts.settle",
      "attempts.merge",
      "attempts.check",
    ] as const)
      expect(isReadOnly(op), op).toBe(false);
  });
});
