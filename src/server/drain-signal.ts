import { createContextKey } from "@connectrpc/connect";

/**
 * The server's drain signal, in every call's context values: aborted when
 * the server starts draining (SIGTERM), before its drain grace runs out. A
 * long-lived call hands its work off when it fires (a Chat ends after its
 * running turn with UNAVAILABLE, so its client reconnects elsewhere) instead
 * of holding the drain open until the grace expires. Unset: never drains.
 */
export const drainSignalKey = createContextKey<AbortSignal | undefined>(undefined, {
  description: "agentd server drain signal",
});

/** The status a Chat ends with when its server drains: retryable, and says how to continue. */
export const DRAIN_MESSAGE =
  "agentd is shutting down (draining): reconnect to continue the conversation by its session ID; " +
  "inputs without a TurnEnd did not run here and may be sent again with their request IDs";

/** The status a watch or attach stream ends with when its server drains: retryable, and says how to continue. */
export const DRAIN_FOLLOW_MESSAGE =
  "agentd is shutting down (draining): watch or attach again (from the last sequence received); another instance serves it";

/**
 * A signal for a long-lived server stream (WatchSnapshot, AttachInvocation)
 * that aborts when the call ends or when the server drains, and `check`,
 * which turns the end of such a stream caused by the drain (not by the
 * caller) into UNAVAILABLE, so the client follows the stream elsewhere.
 */
export function followUntilDrain(
  callSignal: AbortSignal,
  drain: AbortSignal | undefined,
): { signal: AbortSignal; drained: () => boolean } {
  if (!drain) return { signal: callSignal, drained: () => false };
  return { signal: AbortSignal.any([callSignal, drain]), drained: () => drain.aborted && !callSignal.aborted };
}
