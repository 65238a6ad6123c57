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
