import type { Message, Part, ToolRequest } from "../types/content.js";
import type { FinishReason } from "../types/snapshot.js";
import type { ModelChunk } from "../types/agent-io.js";
import type { Usage } from "../types/usage.js";

/** A tool as described to a model. */
export interface ModelToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the tool's input. */
  inputSchema: Record<string, unknown>;
}

/**
 * What a model is asked to continue. System text travels as `system`-role
 * messages (prompt-rendered ones first); providers place leading system
 * messages where their API expects system instructions.
 */
export interface ModelRequest {
  /** Prompt-rendered messages first, then the session history. */
  messages: readonly Message[];
  /** Tools the model may request (it never runs them: the caller does). */
  tools?: ModelToolDefinition[];
  /**
   * Generation config: `temperature`, `maxOutputTokens`, `topP`, `topK`,
   * `stopSequences`, `seed`, `presencePenalty`, `frequencyPenalty`, plus
   * `timeoutMs` and `maxRetries` for hosted providers; other keys are passed
   * to the provider as provider options.
   */
  config?: Record<string, unknown>;
}

/**
 * A model's complete answer to one request. Tool calls are `toolRequest`
 * parts of `message` (each with a `ref`); `finishReason` is `stop` when the
 * model stopped to call tools.
 */
export interface ModelResponse {
  message: Message;
  finishReason: FinishReason;
  /** Tokens the call used, as the provider reported them; absent when it reported none. */
  usage?: Usage;
}

/** The tool requests of a message, in the model's order. */
export function toolRequestsOf(message: Message | undefined): ToolRequest[] {
  return (message?.content ?? []).flatMap((p) => (p.toolRequest ? [p.toolRequest] : []));
}

/** Per-call options: cancellation and streaming. */
export interface ModelCallOptions {
  signal: AbortSignal;
  /**
   * Receives each streamed chunk, in order, before generate resolves. When it
   * returns a promise, the model awaits it before the next chunk
   * (backpressure from a slow reader).
   */
  onChunk?: (chunk: ModelChunk) => void | Promise<void>;
}

/**
 * A text-generation model. `generate` streams chunks through `onChunk` and
 * resolves with the whole message; it rejects with an AbortError-named error
 * (or AgentError CANCELLED) when `signal` aborts.
 */
export interface Model {
  readonly name: string;
  generate(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse>;
}

/** The text parts of a model response concatenated. */
export function partsText(parts: Part[]): string {
  return parts.map((p) => p.text ?? "").join("");
}
