/**
 * The plain runtime types the client speaks (re-exported so client code needs
 * only `@agentd-dev/agentd/client`), plus the helpers to build inputs.
 */
export type { AgentErrorData, StatusName } from "../errors/agent-error.js";
export type {
  AgentDescriptor,
  AgentInput,
  AgentOutput,
  AgentStreamChunk,
  InputAck,
  InputAckResult,
  JsonPatchOperation,
  ModelChunk,
  StateManagement,
  Takeover,
  ToolResume,
  TurnEnd,
} from "../types/agent-io.js";
export { messageText, userText, type Artifact, type Message, type Part, type Role } from "../types/content.js";
export type { AgentInit, SessionState } from "../types/session-state.js";
export {
  isTerminalStatus,
  type FinishReason,
  type PendingInput,
  type SessionSnapshot,
  type SnapshotStatus,
} from "../types/snapshot.js";
export type { Usage } from "../types/usage.js";
export { DEFAULT_RETRY_POLICY, type RetryEvent, type RetryOptions, type RetryPolicy } from "./retry-policy.js";
