import type { Usage } from "../../types/usage.js";
import type { SessionHead, SessionStore, StoreCallContext } from "../../../stores/snapshot-store.js";

/**
 * Removes `head`'s lease, as it was read, by a compare-and-set on its
 * version (nothing else changes but `updatedAt`). Resolves to the stored
 * head, or undefined when the head moved meanwhile (nothing written).
 */
export function dropLease<S>(
  store: SessionStore<S>,
  head: SessionHead,
  now: number,
  ctx?: StoreCallContext,
): Promise<SessionHead | undefined> {
  const { lease: _lease, ...rest } = withoutVersion(head);
  return store.commit({ expectedVersion: head.version, head: { ...rest, updatedAt: now } }, ctx);
}

/**
 * `known` (without its version) moved to `headSnapshotId` by one more turn:
 * one copy, assigned rather than spread twice (a commit does this every turn).
 * `known` itself is not changed.
 */
export function movedHead(
  known: SessionHead,
  headSnapshotId: string,
  now: number,
  lease: NonNullable<SessionHead["lease"]>,
  usage: Usage | undefined,
): Omit<SessionHead, "version"> {
  const head = withoutVersion(known);
  head.headSnapshotId = headSnapshotId;
  head.turnCount = known.turnCount + 1;
  head.updatedAt = now;
  head.lease = lease;
  if (usage) head.usage = usage;
  return head;
}

/** A shallow copy of `head` without its version: the body of a compare-and-set write. */
export function withoutVersion(head: SessionHead): Omit<SessionHead, "version"> {
  const { version: _version, ...rest } = head;
  return rest;
}
