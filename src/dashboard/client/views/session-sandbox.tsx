/**
 * The sandbox a session runs in and what it blocked, on the session's view (docs/architecture.md,
 * "Sandboxes: the team's rules"). Apart from the rules' editor (sandbox.tsx), which loads with the policy:
 * this one is in the first script, and carries no schema library.
 */
import type { SessionSandbox } from "@agent-runtime/protocol/sandbox-rules";
import type { TranscriptEntry } from "@agent-runtime/protocol/sessions";
import { badgeOf, blockText, sandboxDetail } from "../sandbox-text";

/** The sandbox in force on a session, said plainly (`full` as such), and every block seen in its transcript. */
export function SessionSandboxPanel(props: { sandbox: SessionSandbox | null; entries: readonly TranscriptEntry[] }) {
  const badge = badgeOf(props.sandbox);
  const blocks = props.entries.filter((e) => e.kind === "sandbox");
  return (
    <div id="session-sandbox">
      <p class="row">
        <span id="session-sandbox-badge" class={`badge sandbox ${badge.profile}`}>
          {badge.text}
        </span>
        <span class="muted grow">{props.sandbox ? sandboxDetail(props.sandbox) : "recorded before sandboxes: what its agent may do is not known"}</span>
      </p>
      {blocks.length > 0 ? (
        <details id="session-blocks">
          <summary>
            {blocks.length} {blocks.length === 1 ? "thing" : "things"} blocked by the sandbox
          </summary>
          <ul>
            {blocks.map((b) => (
              <li key={b.seq}>{blockText(b)}</li>
            ))}
          </ul>
        </details>
      ) : null}
    </div>
  );
}
