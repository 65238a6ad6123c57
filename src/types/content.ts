/** Who authored a message. */
export type Role = "user" | "model" | "system" | "tool";

/** A model's request to call a tool. */
export interface ToolRequest {
  /** Correlates the request with its response. */
  ref?: string;
  name: string;
  input?: unknown;
}

/** The answer to a {@link ToolRequest}. */
export interface ToolResponse {
  ref?: string;
  name: string;
  output?: unknown;
}

/** A media reference (URL or data: URL). */
export interface Media {
  url: string;
  contentType?: string;
}

/**
 * One piece of content. Exactly one of the content fields is set; `metadata`
 * may accompany any of them. Mirrors `agentd.v1.Part`.
 */
export interface Part {
  text?: string;
  media?: Media;
  toolRequest?: ToolRequest;
  toolResponse?: ToolResponse;
  data?: unknown;
  reasoning?: string;
  custom?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

/** One entry of a conversation history. Mirrors `agentd.v1.Message`. */
export interface Message {
  role: Role;
  content: Part[];
  metadata?: Record<string, unknown>;
}

/**
 * A named collection of parts produced during a session. Adding an artifact
 * whose name is already present replaces it; unnamed artifacts append.
 */
export interface Artifact {
  name?: string;
  parts: Part[];
  metadata?: Record<string, unknown>;
}

/** The concatenated text of a message's text parts ("" for none). */
export function messageText(message: Message | undefined): string {
  return (message?.content ?? []).map((p) => p.text ?? "").join("");
}

/** A user message holding one text part. */
export function userText(text: string, metadata?: Record<string, unknown>): Message {
  return { role: "user", content: [{ text }], ...(metadata ? { metadata } : {}) };
}
