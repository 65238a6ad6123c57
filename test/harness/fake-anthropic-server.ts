// A local HTTP server speaking the Anthropic Messages API for real
// (POST /v1/messages with `stream: true` → SSE `event:`/`data:` pairs
// message_start, content_block_start/delta/stop per text or tool_use block,
// message_delta with the stop_reason, message_stop; errors as HTTP status +
// `{"type":"error","error":{"type":…,"message":…}}`, or as an `error` event in
// the middle of a 200 stream, as Anthropic does when overloaded). It stands in
// for api.anthropic.com: point ANTHROPIC_BASE_URL at `baseUrl` (which, like the
// provider's default https://api.anthropic.com/v1, includes `/v1`).
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

/** A tool_use block the fake model emits. */
export interface FakeToolUse {
  id: string;
  name: string;
  /** JSON input; streamed as two input_json_delta pieces. */
  input: string;
}

/** How the fake answers one request. */
export type FakeAnthropicReply =
  | {
      kind: "stream";
      text?: string[];
      toolUses?: FakeToolUse[];
      stopReason?: "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | "refusal";
    }
  /** An HTTP error; `type` defaults to the one Anthropic uses for the status. */
  | { kind: "error"; status: number; message: string; type?: string }
  /** A 200 stream that starts, then fails with an `error` event (e.g. overloaded_error). */
  | { kind: "stream-error"; type: string; message: string }
  | HangReply;

/** A running fake; `baseUrl` (…/v1) is the value for ANTHROPIC_BASE_URL. */
export type FakeAnthropicServer = FakeProviderServer<FakeAnthropicReply>;

/** Anthropic's error type for an HTTP status (https://docs.anthropic.com/en/api/errors). */
function errorType(status: number): string {
  const types: Record<number, string> = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
  };
  return types[status] ?? "api_error";
}

function event(res: ServerResponse, data: { type: string } & Record<string, unknown>): void {
  writeSseEvent(res, data, data.type);
}

function messageStart(res: ServerResponse, model: string): void {
  const message = {
    id: "msg_fake",
    type: "message",
    role: "assistant",
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 3, output_tokens: 1 },
  };
  event(res, { type: "message_start", message });
  event(res, { type: "ping" });
}

function stream(res: ServerResponse, model: string, reply: Extract<FakeAnthropicReply, { kind: "stream" }>): void {
  startSse(res);
  messageStart(res, model);
  let index = 0;
  if (reply.text?.length) {
    event(res, { type: "content_block_start", index, content_block: { type: "text", text: "" } });
    for (const piece of reply.text)
      event(res, { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } });
    event(res, { type: "content_block_stop", index });
    index += 1;
  }
  for (const use of reply.toolUses ?? []) {
    event(res, {
      type: "content_block_start",
      index,
      content_block: { type: "tool_use", id: use.id, name: use.name, input: {} },
    });
    for (const piece of ["", ...halves(use.input)])
      event(res, { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } });
    event(res, { type: "content_block_stop", index });
    index += 1;
  }
  const stopReason = reply.stopReason ?? (reply.toolUses?.length ? "tool_use" : "end_turn");
  event(res, {
    type: "message_delta",
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: 7 },
  });
  event(res, { type: "message_stop" });
  res.end();
}

/** Starts the fake on 127.0.0.1 and a free port. */
export function startFakeAnthropicServer(): Promise<FakeAnthropicServer> {
  return startFakeProviderServer<FakeAnthropicReply>({
    basePath: "/v1",
    routes: (path) => path === "/v1/messages",
    defaultReply: { kind: "stream", text: ["ok"] },
    respond: (reply, request, res) => {
      if (reply.kind === "error") {
        writeJson(res, reply.status, {
          type: "error",
          error: { type: reply.type ?? errorType(reply.status), message: reply.message },
          request_id: "req_fake",
        });
      } else if (reply.kind === "stream-error") {
        startSse(res);
        messageStart(res, String(request.body.model));
        event(res, { type: "error", error: { type: reply.type, message: reply.message } });
        res.end();
      } else {
        stream(res, String(request.body.model), reply);
      }
    },
    notFound: (method, path, res) =>
      writeJson(res, 404, { type: "error", error: { type: "not_found_error", message: `no route ${method} ${path}` } }),
  });
}
