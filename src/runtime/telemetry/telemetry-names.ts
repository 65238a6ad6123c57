/**
 * The names agentd's spans, attributes and metrics use. Where an OpenTelemetry
 * semantic convention exists its name is used, copied here rather than
 * imported: the RPC and GenAI conventions live in the "incubating" entry of
 * `@opentelemetry/semantic-conventions`, which the conventions' own
 * guidance says libraries should copy, not import (a test checks these
 * values against that package). Everything agentd-specific is `agentd.*`.
 * No attribute ever carries message text, tool input or output, or a credential.
 */

/** The instrumentation scope (tracer and meter name). */
export const INSTRUMENTATION_SCOPE = "agentd";

// RPC (server spans and rpc.server.call.duration).
/** `grpc` (gRPC and gRPC-Web) or `connect_rpc` (the Connect protocol). */
export const ATTR_RPC_SYSTEM = "rpc.system";
/** The stable successor of `rpc.system` (same values). */
export const ATTR_RPC_SYSTEM_NAME = "rpc.system.name";
/** The full service name, e.g. `agentd.v1.AgentService`. */
export const ATTR_RPC_SERVICE = "rpc.service";
/** The method name, e.g. `Run`. */
export const ATTR_RPC_METHOD = "rpc.method";
/** The call's status code name, e.g. `OK`, `NOT_FOUND`. */
export const ATTR_RPC_STATUS_CODE = "rpc.status_code";
/** gRPC and gRPC-Web calls: the numeric gRPC status code. */
export const ATTR_RPC_GRPC_STATUS_CODE = "rpc.grpc.status_code";
/** Connect calls that failed: the Connect error code, e.g. `not_found`. */
export const ATTR_RPC_CONNECT_RPC_ERROR_CODE = "rpc.connect_rpc.error_code";
/** The status code name of a failed call or turn (stable `error.type`). */
export const ATTR_ERROR_TYPE = "error.type";
/** `rpc.system` value for gRPC and gRPC-Web. */
export const RPC_SYSTEM_GRPC = "grpc";
/** `rpc.system` value for the Connect protocol. */
export const RPC_SYSTEM_CONNECT_RPC = "connect_rpc";
/** Histogram of server call durations, in seconds. */
export const METRIC_RPC_SERVER_CALL_DURATION = "rpc.server.call.duration";

// GenAI (model and tool spans, token usage).
export const ATTR_GEN_AI_OPERATION_NAME = "gen_ai.operation.name";
export const ATTR_GEN_AI_PROVIDER_NAME = "gen_ai.provider.name";
export const ATTR_GEN_AI_REQUEST_MODEL = "gen_ai.request.model";
export const ATTR_GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons";
export const ATTR_GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens";
export const ATTR_GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens";
export const ATTR_GEN_AI_TOOL_NAME = "gen_ai.tool.name";
export const ATTR_GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id";
export const ATTR_GEN_AI_AGENT_NAME = "gen_ai.agent.name";
export const ATTR_GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id";
/** `input` or `output`: the direction of `agentd.tokens`. */
export const ATTR_GEN_AI_TOKEN_TYPE = "gen_ai.token.type";
/** `gen_ai.operation.name` of a model call. */
export const GEN_AI_OPERATION_CHAT = "chat";
/** `gen_ai.operation.name` of a tool call. */
export const GEN_AI_OPERATION_EXECUTE_TOOL = "execute_tool";

// agentd.
/** The agent's name. */
export const ATTR_AGENT = "agentd.agent";
export const ATTR_SESSION_ID = "agentd.session.id";
export const ATTR_SNAPSHOT_ID = "agentd.snapshot.id";
export const ATTR_PARENT_SNAPSHOT_ID = "agentd.snapshot.parent_id";
export const ATTR_TURN_INDEX = "agentd.turn.index";
export const ATTR_FINISH_REASON = "agentd.finish_reason";
/** True for a turn that ran after its invocation was detached (background work). */
export const ATTR_DETACHED = "agentd.detached";
/** The session store kind: `memory`, `file`, `mongodb` (or the name it was wrapped with). */
export const ATTR_STORE = "agentd.store";
/** The store operation: `getHead`, `commit`, `getRecord`, `getChain`, ... */
export const ATTR_STORE_OPERATION = "agentd.store.operation";

/** The span of one turn. */
export const SPAN_TURN = "agentd.turn";
/** The span of an invocation's background half, from detach to its final row. */
export const SPAN_DETACHED = "agentd.detached";

/** Counter of finished turns (agent, finish reason). */
export const METRIC_TURNS = "agentd.turns";
/** Histogram of turn durations, in seconds (agent, finish reason). */
export const METRIC_TURN_DURATION = "agentd.turn.duration";
/** Up-down counter of invocations running in this process (agent). */
export const METRIC_INVOCATIONS_ACTIVE = "agentd.invocations.active";
/** Up-down counter of server-streaming and bidi calls open (rpc.method). */
export const METRIC_STREAMS_OPEN = "agentd.streams.open";
/** Up-down counter of detached invocations still running in this process (agent). */
export const METRIC_DETACHED_PENDING = "agentd.detached.pending";
/** Histogram of session store operation durations, in seconds (store, operation). */
export const METRIC_STORE_OPERATION_DURATION = "agentd.store.operation.duration";
/** Counter of model tokens (agent, model, direction input/output). */
export const METRIC_TOKENS = "agentd.tokens";
/** Counter of tool calls (tool, outcome ran / replayed / refused). */
export const METRIC_TOOL_CALLS = "agentd.tool.calls";
/** How a tool call was answered: `ran`, `replayed` (from the journal) or `refused` (a never-repeat call interrupted). */
export const ATTR_TOOL_OUTCOME = "agentd.tool.outcome";
