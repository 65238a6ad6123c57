import { AgentError } from "../../errors/agent-error.js";

/** ABORTED for a REJECT call on a session that `holder` runs on, naming the holder and the other policies. */
export function busyError(sessionId: string, holder: string): AgentError {
  return new AgentError(
    "ABORTED",
    `session "${sessionId}" is busy: invocation "${holder}" is running on it (busy policy REJECT); retry when it has finished, or send busy_policy ENQUEUE to wait or INTERRUPT to stop it`,
    { details: { sessionId, runningInvocationId: holder } },
  );
}

/** RESOURCE_EXHAUSTED for an ENQUEUE call on a session whose line of waiters is full. */
export function lineFullError(sessionId: string, queued: number, maxWaiters: number): AgentError {
  return new AgentError(
    "RESOURCE_EXHAUSTED",
    `session "${sessionId}" already has ${queued} queued invocations (the limit); retry later`,
    { details: { sessionId, maxWaiters } },
  );
}

/**
 * Throws once `signal` aborted while waiting for a busy session: CANCELLED
 * when the call was cancelled, DEADLINE_EXCEEDED otherwise (its deadline
 * passed). Returns when `signal` is absent or not aborted.
 */
export function throwIfAborted(signal: AbortSignal | undefined, sessionId: string): void {
  if (!signal?.aborted) return;
  const reason = signal.reason as { code?: unknown; status?: unknown } | undefined;
  // A cancelled call (Connect code 1, or our CANCELLED) stays CANCELLED; a passed deadline is DEADLINE_EXCEEDED.
  if (reason?.code === 1 || reason?.status === "CANCELLED") {
    throw new AgentError("CANCELLED", `the call was cancelled while waiting for busy session "${sessionId}"`);
  }
  throw new AgentError(
    "DEADLINE_EXCEEDED",
    `gave up waiting for busy session "${sessionId}": the call's deadline passed first (busy policy ENQUEUE)`,
  );
}
