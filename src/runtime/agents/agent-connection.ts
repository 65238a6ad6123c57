import type { AgentError } from "../../errors/agent-error.js";
import type { AgentInput, AgentOutput, AgentStreamChunk } from "../../types/agent-io.js";

/**
 * A live multi-turn invocation (the seeds' AgentConnection). Send inputs; read
 * `stream` for chunks (each turn ends with a `turnEnd` chunk); `output()` closes
 * the input side, drains, and resolves with the final output.
 */
export interface AgentConnection<S = unknown> {
  /** The conversation ID (settled before the first turn). */
  readonly sessionId: string;
  /**
   * Queues an input. Throws AgentError INVALID_ARGUMENT for an empty input,
   * FAILED_PRECONDITION once input is closed or for a detach the agent cannot do.
   */
  send(input: AgentInput): void;
  /** Queues a user text message. */
  sendText(text: string, metadata?: Record<string, unknown>): void;
  /** Hands the remaining work to the server; the output resolves with the pending snapshot. */
  detach(): void;
  /** No more input. Idempotent. */
  close(): void;
  /**
   * Ends the invocation with an RPC-level error: before detach the work is
   * cancelled and no snapshot is written for the running turn; `stream` and
   * `output()` reject with `error`. No-op once the invocation has settled.
   */
  cancel(error: AgentError): void;
  /** Every chunk of every turn, in order; ends with the invocation, or throws its RPC-level error. Single consumer. */
  readonly stream: AsyncIterable<AgentStreamChunk>;
  /** Closes the input side and resolves with the final output. In-band failures resolve (finishReason `failed`). */
  output(): Promise<AgentOutput<S>>;
  /** Live custom state, as seen by the client (streamed patches applied). */
  readonly custom: S | undefined;
}
