// The agentd library: define agents, run them in-process, serve them.
export { AgentError, type AgentErrorData, type StatusName } from "./errors/agent-error.js";
export * from "./types/content.js";
export * from "./types/session-state.js";
export * from "./types/snapshot.js";
export * from "./types/agent-io.js";
export * from "./types/usage.js";
export { Agent, isAgent, type AgentDefinition, type AnyAgent, type CallOptions } from "./runtime/agents/agent.js";
export { defineCustomAgent, type CustomAgentDefinition } from "./runtime/agents/custom-agent.js";
export type {
  AgentContext,
  AgentFn,
  AgentResult,
  Responder,
  TurnContext,
  TurnFn,
  TurnFnContext,
} from "./runtime/agents/agent-function.js";
export type { AgentConnection } from "./runtime/agents/agent-connection.js";
export { AgentRegistry, type AgentRegistryOptions } from "./runtime/agents/agent-registry.js";
export type {
  RuntimeEvents,
  TurnEvent,
  AbortObservedEvent,
  BackgroundFinishedEvent,
  WorkTakenOverEvent,
} from "./runtime/invocations/runtime-events.js";
export type { TakeoverReport } from "./runtime/background/work-takeover.js";
export { Session } from "./runtime/sessions/session.js";
export { SessionRunner } from "./runtime/sessions/session-runner.js";
export { generateModelTurn } from "./runtime/agents/model-turn.js";
export { traceSessionStore } from "./runtime/telemetry/traced-store.js";
export { telemetryRegistered } from "./runtime/telemetry/telemetry.js";
export { applyCustomPatch } from "./streams/custom-patch-stream.js";
export type {
  ChunkTransform,
  ClientTransforms,
  StateTransform,
  TransformContext,
} from "./runtime/agents/state-transform.js";
export { DEFAULT_LIVENESS, type LivenessSettings } from "./runtime/sessions/snapshot-liveness.js";
export {
  DEFAULT_SESSION_SETTINGS,
  sessionSettings,
  type SessionSettings,
  type SessionSettingsOptions,
} from "./runtime/sessions/session-settings.js";
export { DEFAULT_CLAIM_SETTINGS, type ClaimSettings } from "./runtime/sessions/session-claim.js";
export { DEFAULT_RECORD_SETTINGS, type RecordSettings } from "./runtime/sessions/turn-record.js";
export type { SnapshotPage } from "./runtime/sessions/snapshot-access.js";
export type { Model, ModelRequest, ModelResponse, ModelCallOptions } from "./models/model.js";
export { EchoModel, splitIntoChunks } from "./models/echo-model.js";
export { ScriptedModel, directiveScript, type ModelScript, type ScriptedReply } from "./models/scripted-model.js";
export { builtinModelResolver, type ModelResolver, type ModelSettings } from "./models/model-resolver.js";
export { toolRequestsOf, type ModelToolDefinition } from "./models/model.js";
export { defineAgent, type InlineAgentDefinition, type PromptBackedOptions } from "./prompts/inline-agent.js";
export { definePromptAgent, promptAgentsFromDirectory, type PromptAgentDefinition } from "./prompts/prompt-agent.js";
export { PromptRegistry, type LoadedPrompt, type RenderedPromptTurn } from "./prompts/prompt-registry.js";
export { defineTool, type Tool, type ToolContext, type ToolDefinition } from "./tools/define-tool.js";
export { ToolInterrupt } from "./tools/interrupts.js";
export { toolCallKey, type ToolCallIdentity } from "./tools/tool-journal.js";
export { TOOL_CALL_KEY, type ToolCallEntry, type ToolSemantics } from "./tools/tool-call-journal.js";
export { DEFAULT_MAX_TOOL_ITERATIONS } from "./tools/tool-loop.js";
export type { ToolResolver } from "./tools/tool-resolver.js";
export { McpToolbox, DEFAULT_MCP_CALL_TIMEOUT_MS, type McpToolboxOptions } from "./tools/mcp/mcp-toolbox.js";
export type { McpHeadersHook } from "./tools/mcp/mcp-tool.js";
export {
  parseMcpConfig,
  readMcpConfigFile,
  type McpServerConfig,
  type McpServersConfig,
} from "./tools/mcp/mcp-config.js";
export * from "../stores/index.js";
export { ANONYMOUS, type Principal } from "./types/principal.js";
export type { Authenticate, AuthRequest } from "./server/auth/authenticator.js";
