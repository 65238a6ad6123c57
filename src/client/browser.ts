/**
 * The browser build of `@agentd-dev/agentd/client` (the `browser` export condition):
 * the same API as the Node entry, but `createAgentClient` builds fetch-based
 * `@connectrpc/connect-web` transports and nothing here imports Node modules.
 * Unary and server-streaming calls work; the bidi `chat()` needs HTTP/2
 * request streaming, which browsers' fetch does not offer — use `run()` per
 * turn with `{ sessionId }` (server-managed) or `{ state }` (client-managed).
 */
import type { Transport } from "@connectrpc/connect";
import { AgentClient } from "./agent-client.js";
import { createBrowserTransport, type BrowserTransportOptions } from "./browser-transport.js";
import type { RetryOptions } from "./retry-policy.js";

export { Code, ConnectError } from "@connectrpc/connect";
export { AgentClient, type ListSnapshotsOptions, type SnapshotPage, type SnapshotRef } from "./agent-client.js";
export { createBrowserTransport, type BrowserProtocol, type BrowserTransportOptions } from "./browser-transport.js";
export { ERROR_DETAILS_METADATA_KEY, errorDetails } from "./client-errors.js";
export { Conversation } from "./conversation.js";
export type { ConversationInput } from "./conversation-input.js";
export { StreamedRun } from "./streamed-run.js";
export { traceContextInterceptor } from "./trace-context.js";
export { Turn } from "./turn.js";
export * from "./public-types.js";

/** Options of the browser {@link createAgentClient}: fetch transport options, or a ready `transport`, plus the retry options. */
export type BrowserAgentClientOptions = (BrowserTransportOptions | { transport: Transport }) & RetryOptions;

/**
 * An {@link AgentClient} for agentd at `baseUrl` over fetch (`protocol`
 * "connect", the default, or "grpc-web"). With `{ transport }` the transport is
 * taken as is.
 */
export function createAgentClient(baseUrl: string, options: BrowserAgentClientOptions = {}): AgentClient {
  const { retry, onRetry, ...rest } = options;
  const transport = "transport" in rest ? rest.transport : createBrowserTransport(baseUrl, rest);
  return new AgentClient(transport, { ...(retry !== undefined ? { retry } : {}), ...(onRetry ? { onRetry } : {}) });
}
