import type { SessionStore, StoreCallContext } from "../../../stores/snapshot-store.js";
import { DEFAULT_REQUEST_WINDOW, type RequestWindow } from "./request-ledger.js";
import type { LeaseSelf } from "./lease-holder.js";

/** Timing of session leases (see `SessionClaim`). */
export interface ClaimSettings {
  /** A lease not refreshed for this long is void (its holder died). Default 15 s. */
  leaseTtlMs: number;
  /** How often a holder refreshes its lease (and notices it was taken over). Default 5 s. */
  refreshMs: number;
  /** How often an ENQUEUE waiter re-reads the head (in-process releases wake it at once). Default 50 ms. */
  pollMs: number;
  /** Most ENQUEUE waiters one session takes; more get RESOURCE_EXHAUSTED. Default 64. */
  maxWaiters: number;
  /** Which committed request IDs a session remembers (default {@link DEFAULT_REQUEST_WINDOW}). */
  requestWindow?: RequestWindow;
  /**
   * This process as written into its leases (`leaseHolder(instanceId)`;
   * default: `leaseHolder()`, named `<hostname>:<pid>`). A lease whose holder
   * is provably dead by it (see `holderGone`) is void at once, whatever its
   * `expiresAt`.
   */
  self?: LeaseSelf;
}

/** The default lease timing (frozen: callers copy it to change a field). */
export const DEFAULT_CLAIM_SETTINGS: Readonly<ClaimSettings> = Object.freeze({
  leaseTtlMs: 15_000,
  refreshMs: 5_000,
  pollMs: 50,
  maxWaiters: 64,
  requestWindow: DEFAULT_REQUEST_WINDOW,
});

/** Who claims a session: the store, session, invocation and lease timing a `SessionClaim` works with. */
export interface ClaimIdentity<S> {
  store: SessionStore<S>;
  sessionId: string;
  agent: string;
  owner: string;
  invocationId: string;
  ctx?: StoreCallContext;
  settings: ClaimSettings;
  /** Labels and time-to-live of the head this claim creates (a new session). */
  fresh?: NewSessionFields;
  /**
   * The request ID of the invocation's first input, if it carried one: under
   * REJECT, a session busy with that same input (or that already committed
   * it) is waited for instead of refused, so a retry gets the original's turn.
   */
  requestId?: string;
}

/** What a new session's head carries besides its identity. */
export interface NewSessionFields {
  labels?: Record<string, string>;
  ttlMs?: number;
}
