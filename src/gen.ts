/**
 * The generated protobuf-es v2 code of the agentd.v1 contract (package subpath
 * `@agentd-dev/agentd/gen`): message schemas and types (`ChatRequestSchema`,
 * `ChatRequest`, …), enums, and the `AgentService` descriptor for
 * `createClient(AgentService, transport)`. Single files: `@agentd-dev/agentd/gen/agentd/v1/agent_pb`,
 * `…/agent_service_pb`, `…/content_pb`, `…/state_pb`.
 */
export * from "../gen/ts/agentd/v1/content_pb.js";
export * from "../gen/ts/agentd/v1/state_pb.js";
export * from "../gen/ts/agentd/v1/agent_pb.js";
export * from "../gen/ts/agentd/v1/agent_service_pb.js";
