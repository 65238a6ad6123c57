import type { Transport } from "@connectrpc/connect";
import { AgentClient } from "./agent-client.js";
import { createNodeTransport, type NodeTransportOptions } from "./node-transport.js";
import type { RetryOptions } from "./retry-policy.js";

/**
 * Options of {@link createAgentClient} in Node.js: a protocol (plus optional
 * HTTP version, format, interceptors, timeout), or a ready `transport` (which
 * wins; e.g. from `createBrowserTransport`), plus the retry options (retries
 * are on by default; `retry: false` turns them off).
 */
export type AgentClientOptions = (NodeTransportOptions | { transport: Transport }) & RetryOptions;

/**
 * An {@link AgentClient} for agentd at `baseUrl` (e.g. `http://127.0.0.1:8080`).
 * `{ protocol: "grpc" }` uses gRPC over HTTP/2; `"connect"` defaults to HTTP/2
 * so the bidi Chat works; `"grpc-web"` defaults to HTTP/1.1 (unary and
 * server-streaming only). With `{ transport }`, `baseUrl` is unused and the
 * transport is taken as is. Throws a `ConnectError` with
 * `Code.InvalidArgument` for an impossible combination (gRPC over HTTP/1.1).
 */
export function createAgentClient(baseUrl: string, options: AgentClientOptions = { protocol: "grpc" }): AgentClient {
  const { retry, onRetry, ...rest } = options;
  const transport = "transport" in rest ? rest.transport : createNodeTransport(baseUrl, rest);
  return new AgentClient(transport, { ...(retry !== undefined ? { retry } : {}), ...(onRetry ? { onRetry } : {}) });
}
