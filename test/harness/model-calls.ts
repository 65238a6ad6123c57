import { expect } from "vitest";
import { AgentError, type StatusName } from "../../src/errors/agent-error.js";
import type { Model, ModelRequest, ModelResponse, ModelToolDefinition } from "../../src/models/model.js";
import type { ModelChunk } from "../../src/types/agent-io.js";

/** A one-argument tool as the provider-adapter tests declare it to a model. */
export const WEATHER_TOOL: ModelToolDefinition = {
  name: "weather",
  description: "Current weather for a city.",
  inputSchema: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  },
};

/** The smallest request: one user message "hello". */
export const HELLO: ModelRequest = { messages: [{ role: "user", content: [{ text: "hello" }] }] };

/**
 * The HTTP statuses every provider adapter maps the same way (each test file
 * adds its provider's own rows, e.g. Anthropic's 529).
 */
export const COMMON_HTTP_STATUS_MAPPING: readonly (readonly [number, StatusName])[] = [
  [400, "INVALID_ARGUMENT"],
  [401, "UNAUTHENTICATED"],
  [403, "PERMISSION_DENIED"],
  [404, "NOT_FOUND"],
  [429, "RESOURCE_EXHAUSTED"],
  [500, "UNAVAILABLE"],
];

/** Calls `model` and returns its response plus every chunk it streamed, in order. */
export async function generateWith(
  model: Model,
  request: ModelRequest,
  signal: AbortSignal = new AbortController().signal,
): Promise<{ response: ModelResponse; chunks: ModelChunk[] }> {
  const chunks: ModelChunk[] = [];
  const response = await model.generate(request, { signal, onChunk: (c) => void chunks.push(c) });
  return { response, chunks };
}

/** Calls `model`, expects it to reject with an AgentError, and returns that error. */
export async function failureOf(model: Model, request: ModelRequest): Promise<AgentError> {
  const err = await model.generate(request, { signal: new AbortController().signal }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentError);
  return err as AgentError;
}
