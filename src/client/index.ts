/**
 * The agentd TypeScript client (package subpath `@agentd-dev/agentd/client`).
 *
 * Node.js: `createAgentClient(url, { protocol: "grpc" | "connect" | "grpc-web" })`.
 * Browsers: bundlers resolving the `browser` export condition get
 * `./browser.ts` instead, whose `createAgentClient` uses fetch-based
 * transports and never imports Node modules.
 *
 * All errors are `ConnectError`s; compare `err.code` with {@link Code}.
 */
export { Code, ConnectError } from "@connectrpc/connect";
export {
  AgentClient,
  type ListSessionsOptions,
  type ListSnapshotsOptions,
  type SessionUpdate,
  type SnapshotPage,
  type SnapshotRef,
} from "./agent-client.js";
export type { SessionInfo } from "../types/session-info.js";
export { createBrowserTransport, type BrowserProtocol, type BrowserTransportOptions } from "./browser-transport.js";
export { ERROR_DETAILS_METADATA_KEY, errorDetails } from "./client-errors.js";
export { Conversation, type SteerResult } from "./conversation.js";
export type { ConversationInput } from "./conversation-input.js";
export { createAgentClient, type AgentClientOptions } from "./create-agent-client.js";
export {
  createNodeTransport,
  DEFAULT_CLIENT_KEEPALIVE,
  type ClientProtocol,
  type ClientTls,
  type NodeTransportOptions,
} from "./node-transport.js";
export { StreamedRun } from "./streamed-run.js";
export { traceContextInterceptor } from "./trace-context.js";
export { Turn } from "./turn.js";
export * from "./public-types.js";
