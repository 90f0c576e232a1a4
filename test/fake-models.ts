/**
 * A fake model server on 127.0.0.1 for driving the real agents offline: it speaks the vendors' wire
 * formats as the agents really call them (Gemini `generateContent`/`streamGenerateContent`, Anthropic
 * Messages, OpenAI Responses and Chat Completions, each streamed as the vendor streams it) and plays one
 * script: asked to write a file, it answers with that agent's file-writing tool call; given the tool's
 * result, it answers with text and ends the turn. Every request is recorded for the test to inspect.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  path: string;
  body: unknown;
}

/** What the model does next: call the agent's write tool, or say something and stop. */
type Move = { kind: "write"; path: string; content: string } | { kind: "say"; text: string };

/** The prompt the tests send, and what the model answers to it. */
export const WRITE_PROMPT = (file: string) => `Please create the file ${file} containing exactly: hello from the fake model`;
export const FILE_CONTENT = "hello from the fake model\n";
export const FINAL_TEXT = "Done: the file is written.";

const WRITE_REQUEST = /Please create the file (\S+) containing exactly/;
const SANDBOX_REQUEST = /Please run in the sandbox: (.+)$/m;
export const SANDBOX_PROMPT = (command: string) => `Please run in the sandbox: ${command}`;
/** Write a file, then run a shell command (Claude Code's `Bash`): a task's policy allows the one and denies the other. */
export const WRITE_THEN_RUN_PROMPT = (file: string, command: string) => `${WRITE_PROMPT(file)}\nAfterwards run this command: ${command}`;
const RUN_REQUEST = /^Afterwards run this command: (.+)$/m;
/** Read a file with the agent's own read tool (Claude Code's `Read`), then say what came back. */
export const READ_PROMPT = (file: string) => `Please read the file ${file} and tell me what it says`;
export const READ_FINAL_TEXT = "Done: I tried to read the file.";
const READ_REQUEST = /Please read the file (\S+) and tell me what it says/;

export interface FakeModels {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** The script, read from the conversation so far (as flattened text) and whether a tool result came back. */
function decide(conversation: string, toolResultSeen: boolean): Move {
  if (toolResultSeen) return { kind: "say", text: FINAL_TEXT };
  const match = WRITE_REQUEST.exec(conversation);
  return match ? { kind: "write", path: match[1]!, content: FILE_CONTENT } : { kind: "say", text: "Hello from the fake model." };
}

// ---------------- Gemini (generativelanguage v1beta) ----------------

type GeminiPart = { text?: string; functionCall?: unknown; functionResponse?: unknown };
type GeminiRequest = { contents?: { role?: string; parts?: GeminiPart[] }[]; generationConfig?: Record<string, unknown> };

function gemini(path: string, body: GeminiRequest, res: ServerResponse): void {
  if (path.includes(":countTokens")) {
    json(res, { totalTokens: 12 });
    return;
  }
  const contents = body.contents ?? [];
  const lastUser = [...contents].reverse().find((c) => c.role !== "model");
  const toolResultSeen = lastUser?.parts?.some((p) => p.functionResponse) ?? false;
  const userText = contents
    .filter((c) => c.role !== "model")
    .flatMap((c) => c.parts ?? [])
    .map((p) => p.text ?? "")
    .join("\n");
  const config = body.generationConfig ?? {};
  // Side questions the CLI asks with a JSON schema (who speaks next, routing): a plain, valid answer.
  const structured = config.responseMimeType === "application/json" || "responseJsonSchema" in config || "responseSchema" in config;
  const move = structured ? null : decide(userText, toolResultSeen);
  const parts = !move
    ? [{ text: JSON.stringify({ reasoning: "the model has answered", next_speaker: "user", model_choice: "flash" }) }]
    : move.kind === "write"
      ? [{ functionCall: { name: "write_file", args: { file_path: move.path, content: move.content } } }]
      : [{ text: move.text }];
  const payload = {
    candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 8, totalTokenCount: 20 },
  };
  if (path.includes(":streamGenerateContent")) sse(res, [`data: ${JSON.stringify(payload)}`]);
  else json(res, payload);
}

// ---------------- Anthropic Messages ----------------

type AnthropicBlock = { type: string; text?: string; content?: unknown };
type AnthropicTool = { name: string; input_schema?: { properties?: Record<string, unknown> } };
type AnthropicRequest = { model?: string; stream?: boolean; messages?: { role: string; content: string | AnthropicBlock[] }[]; tools?: AnthropicTool[] };

/** The agent's own file-writing tool (Claude Code's `Write`, OpenCode's `write`) and the name of its path argument. */
function writeTool(tools: AnthropicTool[] | undefined): { name: string; pathKey: string } | null {
  const tool = tools?.find((t) => /^write$/i.test(t.name));
  if (!tool) return null;
  const pathKey = Object.keys(tool.input_schema?.properties ?? {}).find((k) => /path/i.test(k)) ?? "file_path";
  return { name: tool.name, pathKey };
}

function anthropic(path: string, body: AnthropicRequest, res: ServerResponse): void {
  if (path.startsWith("/v1/messages/count_tokens")) {
    json(res, { input_tokens: 12 });
    return;
  }
  const messages = body.messages ?? [];
  const blocks = (m: { content: string | AnthropicBlock[] }) => (typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content);
  const last = messages.at(-1);
  const toolResultSeen = last ? blocks(last).some((b) => b.type === "tool_result") : false;
  const userText = messages
    .filter((m) => m.role === "user")
    .flatMap(blocks)
    .map((b) => b.text ?? "")
    .join("\n");
  // Only the main conversation (the one that offers a write tool) gets the script; side requests (titles, summaries) get text.
  const tool = writeTool(body.tools);
  // After the file's tool result, a command to run (if one was asked): the agent's shell tool.
  const toolResults = messages.flatMap(blocks).filter((b) => b.type === "tool_result").length;
  const runCommand = RUN_REQUEST.exec(userText)?.[1];
  const shell = body.tools?.find((t) => /^bash$/i.test(t.name));
  const lastText =
    last?.role === "user"
      ? blocks(last)
          .map((b) => b.text ?? "")
          .join("\n")
      : "";
  const readPath = READ_REQUEST.exec(lastText)?.[1];
  const reader = body.tools?.find((t) => /^read$/i.test(t.name));
  const run: { name: string; input: Record<string, string> } | null =
    tool && shell && runCommand && toolResults === 1
      ? { name: shell.name, input: { command: runCommand, description: "Run the command asked for" } }
      : tool && reader && readPath && !toolResultSeen
        ? { name: reader.name, input: { file_path: readPath } }
        : null;
  const readAnswered = tool && toolResultSeen && READ_REQUEST.test(userText);
  const move = readAnswered
    ? ({ kind: "say", text: READ_FINAL_TEXT } as const)
    : tool
      ? decide(userText, toolResultSeen)
      : ({ kind: "say", text: "A short title" } as const);
  const id = `msg_fake_${Date.now()}`;
  const usage = { input_tokens: 12, output_tokens: 8, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const content = run
    ? [{ type: "tool_use" as const, id: `toolu_fake_${Date.now()}`, name: run.name, input: run.input }]
    : move.kind === "write"
      ? [
          {
            type: "tool_use" as const,
            id: `toolu_fake_${Date.now()}`,
            name: tool?.name ?? "Write",
            input: { [tool?.pathKey ?? "file_path"]: move.path, content: move.content },
          },
        ]
      : [{ type: "text" as const, text: move.text }];
  const stopReason = run || move.kind === "write" ? "tool_use" : "end_turn";
  if (!body.stream) {
    json(res, { id, type: "message", role: "assistant", model: body.model, content, stop_reason: stopReason, stop_sequence: null, usage });
    return;
  }
  const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}`;
  const block = content[0]!;
  const events = [
    event("message_start", {
      type: "message_start",
      message: { id, type: "message", role: "assistant", model: body.model, content: [], stop_reason: null, stop_sequence: null, usage },
    }),
    block.type === "tool_use"
      ? event("content_block_start", { type: "content_block_start", index: 0, content_block: { ...block, input: {} } })
      : event("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    block.type === "tool_use"
      ? event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } })
      : event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: block.text } }),
    event("content_block_stop", { type: "content_block_stop", index: 0 }),
    event("message_delta", { type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 8 } }),
    event("message_stop", { type: "message_stop" }),
  ];
  sse(res, events);
}

// ---------------- OpenAI Responses ----------------

type ResponsesItem = { type?: string; role?: string; content?: string | { type: string; text?: string }[] };
type ResponsesRequest = { model?: string; stream?: boolean; input?: ResponsesItem[]; tools?: { type?: string; name?: string }[] };

/** Codex writes files with its shell tool: the command asks to run outside the sandbox, which needs the user's approval. */
function responses(body: ResponsesRequest, res: ServerResponse): void {
  const items = body.input ?? [];
  const toolResultSeen = items.at(-1)?.type === "function_call_output";
  const userText = items
    .filter((i) => i.role === "user")
    .flatMap((i) => (typeof i.content === "string" ? [{ type: "input_text", text: i.content }] : (i.content ?? [])))
    .map((c) => c.text ?? "")
    .join("\n");
  const canRun = body.tools?.some((t) => t.name === "exec_command") ?? false;
  // "Please run in the sandbox: <command>" (the last thing the user said): a command inside Codex's sandbox.
  const lastUser = [...items].reverse().find((i) => i.role === "user");
  const lastText = typeof lastUser?.content === "string" ? lastUser.content : (lastUser?.content ?? []).map((c) => c.text ?? "").join("\n");
  const sandboxed = SANDBOX_REQUEST.exec(lastText)?.[1];
  const move =
    canRun && sandboxed && !toolResultSeen
      ? ({ kind: "run", cmd: sandboxed } as const)
      : canRun
        ? decide(sandboxed ? "" : userText, toolResultSeen)
        : ({ kind: "say", text: "A short title" } as const);
  responsesStream(body, move, res);
}

function responsesStream(body: ResponsesRequest, move: Move | { kind: "run"; cmd: string }, res: ServerResponse): void {
  const id = `resp_fake_${Date.now()}`;
  const item =
    move.kind === "run"
      ? {
          type: "function_call",
          id: `fc_${id}`,
          call_id: `call_${id}`,
          name: "exec_command",
          status: "completed",
          arguments: JSON.stringify({ cmd: move.cmd }),
        }
      : move.kind === "write"
        ? {
            type: "function_call",
            id: `fc_${id}`,
            call_id: `call_${id}`,
            name: "exec_command",
            status: "completed",
            arguments: JSON.stringify({
              cmd: `printf '%s\\n' '${move.content.trim()}' > '${move.path}'`,
              sandbox_permissions: "require_escalated",
              justification: `Create ${move.path}`,
            }),
          }
        : { type: "message", id: `msg_${id}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: move.text, annotations: [] }] };
  const usage = {
    input_tokens: 12,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 8,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 20,
  };
  const response = { id, object: "response", created_at: Math.floor(Date.now() / 1000), model: body.model, status: "completed", output: [item], usage };
  const event = (data: { type: string }) => `event: ${data.type}\ndata: ${JSON.stringify(data)}`;
  sse(res, [
    event({ type: "response.created", response: { ...response, status: "in_progress", output: [] } } as { type: string }),
    event({ type: "response.output_item.added", output_index: 0, item } as { type: string }),
    ...(move.kind === "say"
      ? [event({ type: "response.output_text.delta", item_id: item.id, output_index: 0, content_index: 0, delta: move.text } as { type: string })]
      : []),
    event({ type: "response.output_item.done", output_index: 0, item } as { type: string }),
    event({ type: "response.completed", response } as { type: string }),
  ]);
}

// ---------------- plumbing ----------------

function json(res: ServerResponse, value: unknown, status = 200): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

function sse(res: ServerResponse, events: string[]): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const event of events) res.write(`${event}\n\n`);
  res.end();
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  let text = "";
  for await (const chunk of req) text += chunk;
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return text;
  }
}

export async function startFakeModels(): Promise<FakeModels> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer(async (req, res) => {
    const path = req.url ?? "/";
    const body = await readBody(req);
    requests.push({ method: req.method ?? "GET", path, body });
    try {
      if (path.startsWith("/v1beta/models/")) return gemini(path, (body ?? {}) as GeminiRequest, res);
      if (path.startsWith("/v1/messages")) return anthropic(path, (body ?? {}) as AnthropicRequest, res);
      if (path.startsWith("/v1/responses")) return responses((body ?? {}) as ResponsesRequest, res);
      json(res, { error: { message: `the fake model server does not serve ${req.method} ${path}` } }, 404);
    } catch (err) {
      json(res, { error: { message: String(err) } }, 500);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
