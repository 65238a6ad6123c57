// A local HTTP server speaking the OpenAI Chat Completions protocol for real
// (POST /v1/chat/completions, `stream: true` → SSE `data:` chunks ending with
// `data: [DONE]`; errors as HTTP status + OpenAI error JSON). It stands in for
// api.openai.com (which tests cannot reach): point OPENAI_BASE_URL at `baseUrl`.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A tool call the fake model makes. */
export interface FakeToolCall {
  id: string;
  name: string;
  /** JSON arguments; streamed in two pieces to exercise delta assembly. */
  arguments: string;
}

/** How the fake answers one request. */
export type FakeReply =
  | { kind: "stream"; text?: string[]; toolCalls?: FakeToolCall[]; finishReason?: "stop" | "length" | "tool_calls" | "content_filter" }
  | { kind: "error"; status: number; message: string; type?: string; code?: string }
  | { kind: "hang" };

/** One request the fake received. */
export interface RecordedRequest {
  path: string;
  headers: IncomingMessage["headers"];
  body: Record<string, any>;
}

/** A running fake: queue replies, read recorded requests, close. */
export interface FakeOpenAiServer {
  /** e.g. `http://127.0.0.1:40123/v1` — the value for OPENAI_BASE_URL. */
  readonly baseUrl: string;
  readonly requests: RecordedRequest[];
  /** Queues replies for the next requests, in order (default reply: text "ok"). */
  enqueue(...replies: FakeReply[]): void;
  /** Forgets recorded requests and queued replies. */
  reset(): void;
  close(): Promise<void>;
}

function chunk(model: string, delta: Record<string, unknown>, finishReason: string | null = null): string {
  const body = { id: "chatcmpl-fake", object: "chat.completion.chunk", created: 1_700_000_000, model, choices: [{ index: 0, delta, finish_reason: finishReason }] };
  return `data: ${JSON.stringify(body)}\n\n`;
}

function stream(res: ServerResponse, model: string, reply: Extract<FakeReply, { kind: "stream" }>): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  res.write(chunk(model, { role: "assistant", content: "" }));
  for (const piece of reply.text ?? []) res.write(chunk(model, { content: piece }));
  (reply.toolCalls ?? []).forEach((call, index) => {
    const half = Math.floor(call.arguments.length / 2);
    res.write(chunk(model, { tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: call.arguments.slice(0, half) } }] }));
    res.write(chunk(model, { tool_calls: [{ index, function: { arguments: call.arguments.slice(half) } }] }));
  });
  const finish = reply.finishReason ?? (reply.toolCalls?.length ? "tool_calls" : "stop");
  res.write(chunk(model, {}, finish));
  const usage = { id: "chatcmpl-fake", object: "chat.completion.chunk", created: 1_700_000_000, model, choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } };
  res.write(`data: ${JSON.stringify(usage)}\n\n`);
  res.end("data: [DONE]\n\n");
}

/** Starts the fake on 127.0.0.1 and a free port. */
export async function startFakeOpenAiServer(): Promise<FakeOpenAiServer> {
  const requests: RecordedRequest[] = [];
  let queue: FakeReply[] = [];
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8").on("data", (d: string) => (raw += d));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}`, type: "invalid_request_error" } }));
        return;
      }
      const body = JSON.parse(raw) as Record<string, any>;
      requests.push({ path: req.url, headers: req.headers, body });
      const reply = queue.shift() ?? { kind: "stream", text: ["ok"] };
      if (reply.kind === "error") {
        const error = { message: reply.message, type: reply.type ?? "invalid_request_error", param: null, code: reply.code ?? null };
        res.writeHead(reply.status, { "content-type": "application/json" }).end(JSON.stringify({ error }));
      } else if (reply.kind === "hang") {
        hanging.add(res);
        res.on("close", () => hanging.delete(res));
      } else {
        stream(res, String(body.model), reply);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...replies) => void queue.push(...replies),
    reset: () => {
      requests.length = 0;
      queue = [];
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
