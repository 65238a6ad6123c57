import type { SessionSnapshot, SnapshotStatus } from "../src/types/snapshot.js";

/**
 * Per-call context a store may use, e.g. to pick a tenant's path prefix or
 * collection. The server fills it from the request; in-process callers may
 * pass their own.
 */
export interface StoreCallContext {
  /** Tenant identifier for stores configured for tenant isolation. */
  tenant?: string;
}

/** A page request for {@link SnapshotReader.listSnapshots}. */
export interface SnapshotPageRequest {
  /** At most this many snapshots (store default when unset). */
  pageSize?: number;
  /** Opaque token from a previous page's `nextPageToken`. */
  pageToken?: string;
}

/** One page of a session's snapshots, newest first. */
export interface SnapshotPage<S = unknown> {
  snapshots: SessionSnapshot<S>[];
  /** Absent on the last page. */
  nextPageToken?: string;
}

/**
 * Reads snapshots. Every method returns the raw stored row (no transform, no
 * expiry computation) or `undefined` when it does not exist.
 */
export interface SnapshotReader<S = unknown> {
  /** The snapshot with this ID, or undefined. */
  getSnapshot(snapshotId: string, ctx?: StoreCallContext): Promise<SessionSnapshot<S> | undefined>;
  /**
   * The session's most recently created snapshot (greatest `createdAt`, ties
   * broken by the greater `snapshotId`), whatever its status. A rewrite of an
   * older row never moves it ahead, because `createdAt` is kept across rewrites.
   */
  getLatestSnapshot(sessionId: string, ctx?: StoreCallContext): Promise<SessionSnapshot<S> | undefined>;
  /** The session's snapshots, newest first (same order as getLatestSnapshot), paginated. */
  listSnapshots(sessionId: string, page?: SnapshotPageRequest, ctx?: StoreCallContext): Promise<SnapshotPage<S>>;
}

/**
 * Computes the new row from the existing one (undefined for a new row). It must
 * be a pure function of its input: a store may call it more than once. Returning
 * null skips the write.
 */
export type SnapshotMutator<S = unknown> = (
  existing: SessionSnapshot<S> | undefined,
) => SessionSnapshot<S> | null | Promise<SessionSnapshot<S> | null>;

/** Writes snapshots atomically. */
export interface SnapshotWriter<S = unknown> {
  /**
   * Atomically reads the row at `snapshotId` (if any), applies `mutator`, and
   * persists the result, with no lost update under concurrent savers. The store
   * owns identity only: it generates an ID when `snapshotId` is undefined and
   * keeps an existing row's `sessionId`. Resolves to the stored row, or null when
   * the mutator skipped the write.
   */
  saveSnapshot(
    snapshotId: string | undefined,
    mutator: SnapshotMutator<S>,
    ctx?: StoreCallContext,
  ): Promise<SessionSnapshot<S> | null>;
}

/**
 * Optional capability: push notification of status changes. Required for
 * detach and abort.
 */
export interface SnapshotSubscriber {
  /**
   * Yields the snapshot's stored status at once (if the row exists), then every
   * change, in order and without duplicates, until `signal` aborts (the
   * iterable then ends and releases its resources).
   */
  subscribeStatus(snapshotId: string, signal: AbortSignal, ctx?: StoreCallContext): AsyncIterable<SnapshotStatus>;
}

/** The minimum a server-managed agent needs. */
export interface SessionStore<S = unknown> extends SnapshotReader<S>, SnapshotWriter<S> {
  /** Releases connections, watchers and timers. Idempotent. */
  close?(): Promise<void>;
}

/** True when the store can push status changes (and so supports detach/abort). */
export function isSnapshotSubscriber<S>(store: SessionStore<S> | undefined): store is SessionStore<S> & SnapshotSubscriber {
  return typeof (store as Partial<SnapshotSubscriber> | undefined)?.subscribeStatus === "function";
}
