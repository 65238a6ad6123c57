// agentd copies the semantic-convention names it uses (libraries should not import the
// "incubating" entry at run time); this keeps the copies equal to the published values.
import * as incubating from "@opentelemetry/semantic-conventions/incubating";
import * as stable from "@opentelemetry/semantic-conventions";
import { describe, expect, it } from "vitest";
import * as names from "../../src/runtime/telemetry/telemetry-names.js";

describe("the semantic-convention names agentd uses", () => {
  it("match @opentelemetry/semantic-conventions", () => {
    expect(names.ATTR_RPC_SYSTEM).toBe(incubating.ATTR_RPC_SYSTEM);
    expect(names.RPC_SYSTEM_GRPC).toBe(incubating.RPC_SYSTEM_VALUE_GRPC);
    expect(names.RPC_SYSTEM_CONNECT_RPC).toBe(incubating.RPC_SYSTEM_VALUE_CONNECT_RPC);
    expect(names.ATTR_RPC_SYSTEM_NAME).toBe(stable.ATTR_RPC_SYSTEM_NAME);
    expect(names.ATTR_RPC_SERVICE).toBe(incubating.ATTR_RPC_SERVICE);
    expect(names.ATTR_RPC_METHOD).toBe(stable.ATTR_RPC_METHOD);
    expect(names.ATTR_RPC_STATUS_CODE).toBe(stable.ATTR_RPC_STATUS_CODE);
    expect(names.ATTR_RPC_GRPC_STATUS_CODE).toBe(incubating.ATTR_RPC_GRPC_STATUS_CODE);
    expect(names.ATTR_RPC_CONNECT_RPC_ERROR_CODE).toBe(incubating.ATTR_RPC_CONNECT_RPC_ERROR_CODE);
    expect(names.ATTR_ERROR_TYPE).toBe(stable.ATTR_ERROR_TYPE);
    expect(names.METRIC_RPC_SERVER_CALL_DURATION).toBe(stable.METRIC_RPC_SERVER_CALL_DURATION);
    expect(names.ATTR_GEN_AI_OPERATION_NAME).toBe(incubating.ATTR_GEN_AI_OPERATION_NAME);
    expect(names.ATTR_GEN_AI_PROVIDER_NAME).toBe(incubating.ATTR_GEN_AI_PROVIDER_NAME);
    expect(names.ATTR_GEN_AI_REQUEST_MODEL).toBe(incubating.ATTR_GEN_AI_REQUEST_MODEL);
    expect(names.ATTR_GEN_AI_RESPONSE_FINISH_REASONS).toBe(incubating.ATTR_GEN_AI_RESPONSE_FINISH_REASONS);
    expect(names.ATTR_GEN_AI_USAGE_INPUT_TOKENS).toBe(incubating.ATTR_GEN_AI_USAGE_INPUT_TOKENS);
    expect(names.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS).toBe(incubating.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS);
    expect(names.ATTR_GEN_AI_TOOL_NAME).toBe(incubating.ATTR_GEN_AI_TOOL_NAME);
    expect(names.ATTR_GEN_AI_TOOL_CALL_ID).toBe(incubating.ATTR_GEN_AI_TOOL_CALL_ID);
    expect(names.ATTR_GEN_AI_AGENT_NAME).toBe(incubating.ATTR_GEN_AI_AGENT_NAME);
    expect(names.ATTR_GEN_AI_CONVERSATION_ID).toBe(incubating.ATTR_GEN_AI_CONVERSATION_ID);
    expect(names.ATTR_GEN_AI_TOKEN_TYPE).toBe(incubating.ATTR_GEN_AI_TOKEN_TYPE);
    expect(names.GEN_AI_OPERATION_CHAT).toBe(incubating.GEN_AI_OPERATION_NAME_VALUE_CHAT);
    expect(names.GEN_AI_OPERATION_EXECUTE_TOOL).toBe(incubating.GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL);
  });
});
