// A local HTTP server speaking the OpenAI Chat Completions protocol for real
// (POST /v1/chat/completions, `stream: true` → SSE `data:` chunks ending with
// `data: [DONE]`; errors as HTTP status + OpenAI error JSON). It stands in for
// api.openai.com (which tests cannot reach): point OPENAI_BASE_URL at `baseUrl`.
import type { ServerResponse } from "node:http";
import {
  halves,
  startFakeProviderServer,
  startSse,
  writeJson,
  writeSseEvent,
  type FakeProviderServer,
  type HangReply,
} from "./fake-provider-server.js";

export type { RecordedRequest } from "./fake-provider-server.js";

/** A tool call the fake model makes. */
export interface FakeToolCall {
  id: string;
  name: string;
  /** JSON arguments; streamed in two pieces to exercise delta assembly. */
  arguments: string;
}

/** How the fake answers one request. */
export type FakeReply =
  | {
      kind: "stream";
      text?: string[];
      toolCalls?: FakeToolCall[];
      finishReason?: "stop" | "length" | "tool_calls" | "content_filter";
    }
  | { kind: "error"; status: number; message: string; type?: string; code?: string }
  | HangReply;

/** A running fake: queue replies, read recorded requests, close; `baseUrl` (…/v1) is the value for OPENAI_BASE_URL. */
export type FakeOpenAiServer = FakeProviderServer<FakeReply>;

function chunk(
  model: string,
  delta: Record<string, unknown>,
  finishReason: string | null = null,
): Record<string, unknown> {
  return {
    id: "chatcmpl-fake",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

function stream(res: ServerResponse, model: string, reply: Extract<FakeReply, { kind: "stream" }>): void {
  startSse(res);
  writeSseEvent(res, chunk(model, { role: "assistant", content: "" }));
  for (const piece of reply.text ?? []) writeSseEvent(res, chunk(model, { content: piece }));
  (reply.toolCalls ?? []).forEach((call, index) => {
    const [first, second] = halves(call.arguments);
    writeSseEvent(
      res,
      chunk(model, {
        tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: first } }],
      }),
    );
    writeSseEvent(res, chunk(model, { tool_calls: [{ index, function: { arguments: second } }] }));
  });
  const finish = reply.finishReason ?? (reply.toolCalls?.length ? "tool_calls" : "stop");
  writeSseEvent(res, chunk(model, {}, finish));
  writeSseEvent(res, {
    id: "chatcmpl-fake",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model,
    choices: [],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  });
  writeSseEvent(res, "[DONE]");
  res.end();
}

/** Starts the fake on 127.0.0.1 and a free port. */
export function startFakeOpenAiServer(): Promise<FakeOpenAiServer> {
  return startFakeProviderServer<FakeReply>({
    basePath: "/v1",
    routes: (path) => path === "/v1/chat/completions",
    defaultReply: { kind: "stream", text: ["ok"] },
    respond: (reply, request, res) => {
      if (reply.kind === "error") {
        writeJson(res, reply.status, {
          error: {
            message: reply.message,
            type: reply.type ?? "invalid_request_error",
            param: null,
            code: reply.code ?? null,
          },
        });
      } else {
        stream(res, String(request.body.model), reply);
      }
    },
    notFound: (method, path, res) =>
      writeJson(res, 404, { error: { message: `no route ${method} ${path}`, type: "invalid_request_error" } }),
  });
}
