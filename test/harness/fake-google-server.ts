// A local HTTP server speaking the Gemini API (generativelanguage.googleapis.com)
// for real: POST /v1beta/models/{model}:streamGenerateContent?alt=sse → SSE
// `data:` chunks of GenerateContentResponse (`candidates[0].content.parts` with
// `text` or whole `functionCall` parts, `finishReason` on the last chunk,
// `usageMetadata`); errors as HTTP status + `{"error":{"code","message","status"}}`.
// It stands in for Google: point GOOGLE_GENERATIVE_AI_BASE_URL at `baseUrl`
// (which, like the provider's default, includes `/v1beta`).
import type { ServerResponse } from "node:http";
import {
  startFakeProviderServer,
  startSse,
  writeJson,
  writeSseEvent,
  type FakeProviderServer,
  type HangReply,
} from "./fake-provider-server.js";

/** A functionCall part the fake model emits (Gemini sends the args whole, as an object). */
export interface FakeFunctionCall {
  name: string;
  args: Record<string, unknown>;
  /** Gemini 2.x sends no id (the SDK makes one up); newer models may. */
  id?: string;
}

/** How the fake answers one request. */
export type FakeGoogleReply =
  | {
      kind: "stream";
      text?: string[];
      functionCalls?: FakeFunctionCall[];
      finishReason?: "STOP" | "MAX_TOKENS" | "SAFETY" | "RECITATION" | "MALFORMED_FUNCTION_CALL";
    }
  /** An HTTP error; `status` (the google.rpc code name) defaults to Google's for the HTTP status; `reason` adds an ErrorInfo detail. */
  | { kind: "error"; code: number; message: string; status?: string; reason?: string }
  /** A 200 stream whose first chunk carries text and the next one an `error` object instead of candidates. */
  | { kind: "stream-error"; code: number; message: string; status: string }
  | HangReply;

/** A running fake; `baseUrl` (…/v1beta) is the value for GOOGLE_GENERATIVE_AI_BASE_URL. */
export type FakeGoogleServer = FakeProviderServer<FakeGoogleReply>;

/** The model id of a recorded request's path, e.g. `gemini-test` for `/v1beta/models/gemini-test:streamGenerateContent?alt=sse`. */
export function modelOfPath(path: string): string | undefined {
  return /^\/v1beta\/models\/([^/:]+):streamGenerateContent\?alt=sse$/.exec(path)?.[1];
}

function rpcStatus(code: number): string {
  const names: Record<number, string> = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
  };
  return names[code] ?? "UNKNOWN";
}

function response(
  model: string,
  parts: Record<string, unknown>[] | undefined,
  finishReason?: string,
): Record<string, unknown> {
  const candidate = {
    ...(parts ? { content: { parts, role: "model" } } : {}),
    ...(finishReason ? { finishReason } : {}),
    index: 0,
  };
  const usageMetadata = { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 };
  return {
    candidates: [candidate],
    ...(finishReason ? { usageMetadata } : {}),
    modelVersion: model,
    responseId: "resp-fake",
  };
}

function stream(res: ServerResponse, model: string, reply: Extract<FakeGoogleReply, { kind: "stream" }>): void {
  startSse(res);
  const chunks: Record<string, unknown>[][] = (reply.text ?? []).map((text) => [{ text }]);
  if (reply.functionCalls?.length) {
    chunks.push(
      reply.functionCalls.map((call) => ({
        functionCall: { ...(call.id ? { id: call.id } : {}), name: call.name, args: call.args },
      })),
    );
  }
  const finishReason = reply.finishReason ?? "STOP";
  if (chunks.length === 0) writeSseEvent(res, response(model, undefined, finishReason));
  chunks.forEach((parts, i) =>
    writeSseEvent(res, response(model, parts, i === chunks.length - 1 ? finishReason : undefined)),
  );
  res.end();
}

/** Starts the fake on 127.0.0.1 and a free port. */
export function startFakeGoogleServer(): Promise<FakeGoogleServer> {
  return startFakeProviderServer<FakeGoogleReply>({
    basePath: "/v1beta",
    routes: (path) => modelOfPath(path) !== undefined,
    defaultReply: { kind: "stream", text: ["ok"] },
    respond: (reply, request, res) => {
      if (reply.kind === "error") {
        const details = reply.reason
          ? [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: reply.reason, domain: "googleapis.com" }]
          : undefined;
        writeJson(res, reply.code, {
          error: {
            code: reply.code,
            message: reply.message,
            status: reply.status ?? rpcStatus(reply.code),
            ...(details ? { details } : {}),
          },
        });
      } else if (reply.kind === "stream-error") {
        startSse(res);
        writeSseEvent(res, response(modelOfPath(request.path)!, [{ text: "partial" }]));
        writeSseEvent(res, { error: { code: reply.code, message: reply.message, status: reply.status } });
        res.end();
      } else {
        stream(res, modelOfPath(request.path)!, reply);
      }
    },
    notFound: (method, path, res) =>
      writeJson(res, 404, { error: { code: 404, message: `no route ${method} ${path}`, status: "NOT_FOUND" } }),
  });
}
