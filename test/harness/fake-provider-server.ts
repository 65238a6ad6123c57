// The HTTP plumbing the fake model providers share (fake-openai-server.ts,
// fake-anthropic-server.ts, fake-google-server.ts): a server on 127.0.0.1 and a
// free port that records every routed request, answers it with the next queued
// reply (or holds it open for `hang`), and writes Server-Sent Events. Each fake
// supplies only its provider's protocol: route, stream framing, error body.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request a fake received. */
export interface RecordedRequest {
  /** Path and query, e.g. `/v1beta/models/m:streamGenerateContent?alt=sse`. */
  path: string;
  headers: IncomingMessage["headers"];
  body: Record<string, any>;
}

/** A reply every fake understands: keep the request open, answer nothing (until the client gives up). */
export interface HangReply {
  kind: "hang";
}

/** A running fake: queue replies, read recorded requests, close. */
export interface FakeProviderServer<Reply> {
  /** The provider base URL to configure (origin plus `basePath`). */
  readonly baseUrl: string;
  readonly requests: RecordedRequest[];
  /** Queues replies for the next requests, in order (when empty, the fake's default reply). */
  enqueue(...replies: Reply[]): void;
  /** Forgets recorded requests and queued replies. */
  reset(): void;
  /** Drops hanging requests and stops listening. */
  close(): Promise<void>;
}

/** What a fake provides: its route and how it answers. */
export interface FakeProviderProtocol<Reply> {
  /** Appended to the origin for `baseUrl`, e.g. `/v1`. */
  basePath: string;
  /** True when the fake serves `POST path` (path includes the query). */
  routes(path: string): boolean;
  /** The reply when none is queued. */
  defaultReply: Reply;
  /** Answers a routed request (never called for `hang`). */
  respond(reply: Exclude<Reply, HangReply>, request: RecordedRequest, res: ServerResponse): void;
  /** Answers a request for an unknown route, in the provider's error shape. */
  notFound(method: string, path: string, res: ServerResponse): void;
}

/** Sends a JSON body with an HTTP status. */
export function writeJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

/** Starts an SSE response (200, `text/event-stream`). */
export function startSse(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
}

/** Writes one SSE event: an optional `event:` line, then `data:` with `data` (JSON unless a string). */
export function writeSseEvent(res: ServerResponse, data: unknown, event?: string): void {
  res.write(`${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
}

/** Splits `text` in two halves (to stream JSON arguments in pieces, exercising delta assembly). */
export function halves(text: string): [string, string] {
  const half = Math.floor(text.length / 2);
  return [text.slice(0, half), text.slice(half)];
}

/** Starts a fake provider speaking `protocol` on 127.0.0.1 and a free port. */
export async function startFakeProviderServer<Reply extends { kind: string }>(
  protocol: FakeProviderProtocol<Reply>,
): Promise<FakeProviderServer<Reply>> {
  const requests: RecordedRequest[] = [];
  let queue: Reply[] = [];
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8").on("data", (d: string) => (raw += d));
    req.on("end", () => {
      const path = req.url ?? "/";
      if (req.method !== "POST" || !protocol.routes(path)) {
        protocol.notFound(req.method ?? "?", path, res);
        return;
      }
      const request: RecordedRequest = { path, headers: req.headers, body: JSON.parse(raw) as Record<string, any> };
      requests.push(request);
      const reply = queue.shift() ?? protocol.defaultReply;
      if (reply.kind === "hang") {
        hanging.add(res);
        res.on("close", () => hanging.delete(res));
      } else {
        protocol.respond(reply as Exclude<Reply, HangReply>, request, res);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}${protocol.basePath}`,
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
