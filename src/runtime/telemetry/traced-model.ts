import { SpanKind } from "@opentelemetry/api";
import type { Model, ModelCallOptions, ModelRequest, ModelResponse } from "../../models/model.js";
import type { Usage } from "../../types/usage.js";
import { agentdInstruments, inSpan } from "./telemetry.js";
import * as names from "./telemetry-names.js";

/** What a traced model reports to (the invocation that resolved it). */
export interface TracedModelOptions {
  /** The agent whose turn calls the model (the `agentd.tokens` attribute). */
  agent: string;
  /** Receives each call's usage, when the model reported one. */
  onUsage?: (usage: Usage) => void;
}

/** `model` with each call's usage (when it reported one) passed to `onUsage`, and nothing else added. */
export function countUsage(model: Model, onUsage: (usage: Usage) => void): Model {
  return {
    name: model.name,
    generate: async (request, callOptions) => {
      const response = await model.generate(request, callOptions);
      if (response.usage) onUsage(response.usage);
      return response;
    },
  };
}

/** `gen_ai.provider.name` of a hosted model name's prefix (`openai/…`, `google/…`, `anthropic/…`). */
const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  openai: "openai",
  google: "gcp.gemini",
  anthropic: "anthropic",
};

/**
 * `model` with every `generate` call in a client span `chat <model>` (GenAI
 * conventions: `gen_ai.operation.name` = chat, `gen_ai.request.model`,
 * `gen_ai.provider.name` for hosted models, `gen_ai.response.finish_reasons`,
 * `gen_ai.usage.input_tokens` / `output_tokens`), its tokens counted in
 * `agentd.tokens` and passed to `onUsage`. Neither the prompt nor the answer
 * is recorded. A failed call (cancellation included) fails the span.
 */
export function traceModel(model: Model, options: TracedModelOptions): Model {
  const provider = PROVIDER_NAMES[model.name.split("/")[0] ?? ""];
  const attributes = {
    [names.ATTR_GEN_AI_OPERATION_NAME]: names.GEN_AI_OPERATION_CHAT,
    [names.ATTR_GEN_AI_REQUEST_MODEL]: model.name,
    ...(provider ? { [names.ATTR_GEN_AI_PROVIDER_NAME]: provider } : {}),
  };
  return {
    name: model.name,
    generate: (request: ModelRequest, callOptions: ModelCallOptions): Promise<ModelResponse> =>
      inSpan(`${names.GEN_AI_OPERATION_CHAT} ${model.name}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
        const response = await model.generate(request, callOptions);
        span.setAttribute(names.ATTR_GEN_AI_RESPONSE_FINISH_REASONS, [response.finishReason]);
        const usage = response.usage;
        if (usage) {
          span.setAttribute(names.ATTR_GEN_AI_USAGE_INPUT_TOKENS, usage.inputTokens);
          span.setAttribute(names.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS, usage.outputTokens);
          const tokens = agentdInstruments().tokens;
          const common = { [names.ATTR_AGENT]: options.agent, [names.ATTR_GEN_AI_REQUEST_MODEL]: model.name };
          tokens.add(usage.inputTokens, { ...common, [names.ATTR_GEN_AI_TOKEN_TYPE]: "input" });
          tokens.add(usage.outputTokens, { ...common, [names.ATTR_GEN_AI_TOKEN_TYPE]: "output" });
          options.onUsage?.(usage);
        }
        return response;
      }),
  };
}
