import { AgentError } from "../src/errors/agent-error.js";
import type { SessionHead } from "./snapshot-store.js";

/** A head that carries a lease (valid or lapsed): what `listLeasedHeads` returns. */
export type LeasedHead = SessionHead & { lease: NonNullable<SessionHead["lease"]> };

/** Throws INVALID_ARGUMENT unless `limit` is an integer ≥ 1 (the argument of `listLeasedHeads`). */
export function checkLeasedHeadsLimit(limit: number): void {
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new AgentError("INVALID_ARGUMENT", `listLeasedHeads: limit must be an integer >= 1 (got ${String(limit)})`);
}

/** True when the head carries a lease (valid or lapsed). */
export function hasLease(head: SessionHead): head is LeasedHead {
  return head.lease !== undefined && head.lease !== null;
}

/** The earliest `lease.expiresAt` first, ties broken by the smaller sessionId (plain code-unit comparison). */
export function compareLeaseExpiry(a: LeasedHead, b: LeasedHead): number {
  if (a.lease.expiresAt !== b.lease.expiresAt) return a.lease.expiresAt - b.lease.expiresAt;
  return a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0;
}

/**
 * The heads among `candidates` (any order) that carry a lease, the earliest
 * `lease.expiresAt` first (ties: sessionId ascending), at most `limit` (already
 * checked with {@link checkLeasedHeadsLimit}). O(n log n) in the leased heads.
 */
export function earliestLeases(candidates: Iterable<SessionHead>, limit: number): SessionHead[] {
  const leased: LeasedHead[] = [];
  for (const head of candidates) if (hasLease(head)) leased.push(head);
  return leased.sort(compareLeaseExpiry).slice(0, limit);
}
