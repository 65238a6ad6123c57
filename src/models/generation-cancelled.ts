import { AgentError } from "../errors/agent-error.js";

/**
 * The error a model adapter throws when its `signal` aborted: the abort's
 * reason when that is an AgentError (the work was stopped for a reason the
 * caller must hear: the store was UNAVAILABLE, the row was taken over
 * (ABORTED), a deadline passed), else CANCELLED "generation cancelled"
 * (the client went away or cancelled).
 */
export function generationCancelled(signal: AbortSignal): AgentError {
  const reason: unknown = signal.reason;
  return reason instanceof AgentError ? reason : new AgentError("CANCELLED", "generation cancelled");
}
