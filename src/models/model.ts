import type { Message, Part } from "../types/content.js";
import type { FinishReason } from "../types/snapshot.js";
import type { ModelChunk } from "../types/agent-io.js";

/** A tool as described to a model. */
export interface ModelToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the tool's input. */
  inputSchema: Record<string, unknown>;
}

/** What a model is asked to continue. */
export interface ModelRequest {
  /** Prompt-rendered messages first, then the session history. */
  messages: Message[];
  tools?: ModelToolDefinition[];
  config?: Record<string, unknown>;
}

/** A model's complete answer to one request. */
export interface ModelResponse {
  message: Message;
  finishReason: FinishReason;
}

/** Per-call options: cancellation and streaming. */
export interface ModelCallOptions {
  signal: AbortSignal;
  /** Receives each streamed chunk, in order, before generate resolves. */
  onChunk?: (chunk: ModelChunk) => void;
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
