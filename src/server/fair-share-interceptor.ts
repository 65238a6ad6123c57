import type { Interceptor } from "@connectrpc/connect";
import { ANONYMOUS } from "../types/principal.js";
import { principalKey } from "./auth/call-guard.js";
import type { TenantLimits } from "./tenant-limits.js";
import { connectionSocketKey, type UnauthenticatedShare } from "./unauthenticated-share.js";

/** The procedures that run an agent: each call is one invocation. */
const INVOCATIONS = new Set(["Run", "RunStream", "Chat"]);

/** What {@link fairShareInterceptor} enforces. */
export interface FairShare {
  /** Caps and times out calls without credentials, and frees the connections of authenticated ones. */
  unauthenticated: UnauthenticatedShare;
  /** Per-tenant rate and concurrency. */
  tenants: TenantLimits;
}

/**
 * An interceptor (after the call guard, which sets the principal) that shares
 * a server with authentication fairly:
 * - an authenticated call (also of an open procedure, when it carries valid
 *   credentials) must fit its tenant's connections (on a connection not yet
 *   the tenant's), request rate and, for Run / RunStream / Chat, concurrent
 *   invocations, else RESOURCE_EXHAUSTED with `google.rpc.RetryInfo`; only an
 *   admitted call marks its connection authenticated (no longer counted
 *   against the unauthenticated connections, counted as the tenant's): a
 *   refused one leaves it among the first to be closed;
 * - a call without credentials (health, open reflection) must fit the
 *   unauthenticated calls in flight, else RESOURCE_EXHAUSTED; a streaming one
 *   ends UNAVAILABLE after the unauthenticated stream timeout.
 * Slots are released when the call's signal aborts (its stream closed).
 */
export function fairShareInterceptor(share: FairShare): Interceptor {
  return (next) => async (req) => {
    const principal = req.contextValues.get(principalKey);
    const release = (done: () => void): void => {
      if (req.signal.aborted) done();
      else req.signal.addEventListener("abort", done, { once: true });
    };
    if (principal === ANONYMOUS) {
      const admitted = share.unauthenticated.admitCall();
      if (typeof admitted !== "function") throw admitted;
      release(admitted);
      const res = await next(req);
      return res.stream ? { ...res, message: share.unauthenticated.bound(res.message) } : res;
    }
    const socket = req.contextValues.get(connectionSocketKey);
    const connectionRefused = share.unauthenticated.connectionRefusal(socket, principal.tenant);
    if (connectionRefused) throw connectionRefused;
    const admitted = share.tenants.admit(principal.tenant, INVOCATIONS.has(req.method.name));
    if (admitted instanceof Error) {
      share.unauthenticated.refusedOn(socket);
      throw admitted;
    }
    share.unauthenticated.authenticated(socket, principal.tenant);
    if (admitted) release(admitted);
    return next(req);
  };
}
