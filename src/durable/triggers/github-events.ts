/**
 * What a GitHub delivery asks for (docs/architecture.md, "GitHub triggers"): which of a trigger's events
 * it is (an issue labelled with the label, a new comment starting with the prefix), the issue it is
 * about, and the fields its prompt template may use. Read with zod: a payload is never trusted by its shape.
 */
import type { Outcome } from "@agent-runtime/protocol/pending-calls";
import type { GithubEvent, IssueRef } from "@agent-runtime/protocol/triggers";
import { z } from "zod";

const Issue = z.object({ number: z.number().int(), title: z.string(), body: z.string().nullish(), html_url: z.string() }).passthrough();
const Common = {
  issue: Issue,
  repository: z.object({ full_name: z.string() }).passthrough(),
  sender: z.object({ login: z.string() }).passthrough().optional(),
};
const Labeled = z.object({ action: z.string(), label: z.object({ name: z.string() }).passthrough().optional(), ...Common }).passthrough();
const Commented = z
  .object({
    action: z.string(),
    comment: z
      .object({
        body: z.string(),
        user: z.object({ login: z.string() }).passthrough(),
        // How the author stands to the repository; absent (an old payload) reads as a stranger's.
        author_association: z.string().default("NONE"),
        created_at: z.string().optional(),
      })
      .passthrough(),
    ...Common,
  })
  .passthrough();

/** Who wrote a comment, and when, as GitHub says. */
export interface Commenter {
  login: string;
  association: string;
  /** NaN when the payload does not say. */
  createdAtMs: number;
}

/** What a prompt template may name: `{{title}}` and the others. */
export interface TemplateFields {
  title: string;
  body: string;
  url: string;
  number: string;
  repository: string;
  comment: string;
  author: string;
}

/** The delivery's issue and template fields, when it is one of the trigger's events; else why it is ignored. */
export function deliveryContext(
  event: string,
  payload: unknown,
  events: GithubEvent[],
): Outcome<{ issue: IssueRef; fields: TemplateFields; commenter: Commenter | null }> {
  const ignored = (detail: string): Outcome<never> => ({ ok: false, problem: { code: "invalid_request", detail } });
  if (event === "issues") {
    const p = Labeled.safeParse(payload);
    if (!p.success) return ignored("not an issue event this trigger reads");
    const label = p.data.label?.name;
    if (p.data.action !== "labeled" || !events.some((e) => e.on === "issues.labeled" && e.label === label)) {
      return ignored(`issue ${p.data.action}${label ? ` (${label})` : ""}: not a label this trigger starts on`);
    }
    return { ok: true, value: { ...context(p.data, "", p.data.sender?.login ?? ""), commenter: null } };
  }
  if (event === "issue_comment") {
    const p = Commented.safeParse(payload);
    if (!p.success) return ignored("not a comment event this trigger reads");
    const text = p.data.comment.body.trimStart();
    if (p.data.action !== "created" || !events.some((e) => e.on === "issue_comment" && text.startsWith(e.prefix))) {
      return ignored(`comment ${p.data.action}: it does not start with this trigger's prefix`);
    }
    const { user, author_association, created_at } = p.data.comment;
    const commenter = { login: user.login, association: author_association, createdAtMs: Date.parse(created_at ?? "") };
    return { ok: true, value: { ...context(p.data, p.data.comment.body, user.login), commenter } };
  }
  return ignored(`'${event.slice(0, 64)}' events do not start tasks (issues and issue_comment do)`);
}

function context(data: z.infer<typeof Labeled> | z.infer<typeof Commented>, comment: string, author: string): { issue: IssueRef; fields: TemplateFields } {
  return {
    issue: { repository: data.repository.full_name, issue: data.issue.number },
    fields: {
      title: data.issue.title,
      body: data.issue.body ?? "",
      url: data.issue.html_url,
      number: String(data.issue.number),
      repository: data.repository.full_name,
      comment,
      author,
    },
  };
}

/** `{{title}}` and the others replaced by the delivery's values (a name it does not know stays as written), bounded. */
export function fillTemplate(template: string, fields: TemplateFields): string {
  const byName = new Map<string, string>(Object.entries(fields));
  return template.replace(/\{\{\s*(\w+)\s*\}\}/g, (whole, name: string) => byName.get(name) ?? whole).slice(0, 100_000);
}
