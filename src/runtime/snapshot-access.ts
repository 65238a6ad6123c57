import { AgentError } from "../errors/agent-error.js";
import type { SessionSnapshot, SnapshotStatus } from "../types/snapshot.js";
import { isTerminalStatus } from "../types/snapshot.js";
import type { SessionStore, SnapshotPage, SnapshotSubscriber, StoreCallContext } from "../../stores/snapshot-store.js";
import { pageSizeOf } from "../../stores/snapshot-order.js";
import { isSnapshotSubscriber } from "../../stores/snapshot-store.js";
import { effectiveStatus, type LivenessSettings } from "./snapshot-liveness.js";
import { applyStateTransform, type StateTransform, type TransformContext } from "./state-transform.js";

/** What snapshot reads need from an agent. */
export interface SnapshotAccessTarget<S> {
  name: string;
  store?: SessionStore<S>;
  stateTransform?: StateTransform<S>;
  liveness: LivenessSettings;
}

/** Options of a snapshot read. */
export interface SnapshotReadOptions {
  storeContext?: StoreCallContext;
  headers?: Headers;
}

function requireStore<S>(target: SnapshotAccessTarget<S>): SessionStore<S> {
  if (!target.store) {
    throw new AgentError("FAILED_PRECONDITION", `agent "${target.name}" is client-managed: it keeps no snapshots`);
  }
  return target.store;
}

function requireSubscriber<S>(target: SnapshotAccessTarget<S>): SessionStore<S> & SnapshotSubscriber {
  const store = requireStore(target);
  if (!isSnapshotSubscriber(store)) {
    throw new AgentError("FAILED_PRECONDITION", `the store of agent "${target.name}" cannot push status changes`);
  }
  return store;
}

/**
 * The client-facing view of a stored row: `expired` computed from the
 * heartbeat, and the state transform applied to a copy of the state (or the
 * state dropped when `includeState` is false). Transform errors fail closed.
 */
export async function shapeSnapshot<S>(
  target: SnapshotAccessTarget<S>,
  row: SessionSnapshot<S>,
  options: SnapshotReadOptions & { includeState?: boolean },
): Promise<SessionSnapshot<S>> {
  const { state, ...rest } = row;
  const shaped: SessionSnapshot<S> = { ...structuredClone(rest), status: effectiveStatus(row, target.liveness) };
  if (state && options.includeState !== false) {
    const ctx: TransformContext = { agent: target.name, ...(options.headers ? { headers: options.headers } : {}) };
    const transformed = await applyStateTransform(target.stateTransform, state, ctx);
    if (transformed) shaped.state = transformed;
  }
  return shaped;
}

/**
 * Reads a snapshot by ID (with `sessionId`, asserted against it) or, with only
 * `sessionId`, the session's latest. Throws AgentError INVALID_ARGUMENT (neither
 * given, session mismatch), NOT_FOUND, FAILED_PRECONDITION (client-managed agent).
 */
export async function getSnapshot<S>(
  target: SnapshotAccessTarget<S>,
  ref: { snapshotId?: string; sessionId?: string },
  options: SnapshotReadOptions = {},
): Promise<SessionSnapshot<S>> {
  const store = requireStore(target);
  if (!ref.snapshotId && !ref.sessionId) throw new AgentError("INVALID_ARGUMENT", "set snapshot_id or session_id");
  return shapeSnapshot(target, await readSnapshotRef(store, ref, options.storeContext), options);
}

/**
 * The stored row `ref` names (at least one ID must be set): the snapshot by
 * ID, asserted to belong to `sessionId` when that is set too, else the
 * session's latest. Throws AgentError NOT_FOUND naming the missing snapshot or
 * session, INVALID_ARGUMENT for a session mismatch. Shared by snapshot reads
 * and resume, so both refuse the same refs with the same messages.
 */
export async function readSnapshotRef<S>(
  store: SessionStore<S>,
  ref: { snapshotId?: string; sessionId?: string },
  ctx?: StoreCallContext,
): Promise<SessionSnapshot<S>> {
  const row = ref.snapshotId ? await store.getSnapshot(ref.snapshotId, ctx) : await store.getLatestSnapshot(ref.sessionId!, ctx);
  if (!row) {
    throw ref.snapshotId
      ? new AgentError("NOT_FOUND", `snapshot "${ref.snapshotId}" not found`)
      : new AgentError("NOT_FOUND", `session "${ref.sessionId}" has no snapshots`);
  }
  if (ref.snapshotId && ref.sessionId && row.sessionId !== ref.sessionId) {
    throw new AgentError("INVALID_ARGUMENT", `snapshot "${ref.snapshotId}" belongs to another session than "${ref.sessionId}"`);
  }
  return row;
}

/** A session's snapshots, newest first, paginated; states only with `includeState`. */
export async function listSnapshots<S>(
  target: SnapshotAccessTarget<S>,
  sessionId: string,
  page: { pageSize?: number; pageToken?: string; includeState?: boolean },
  options: SnapshotReadOptions = {},
): Promise<SnapshotPage<S>> {
  const store = requireStore(target);
  if (!sessionId) throw new AgentError("INVALID_ARGUMENT", "session_id is required");
  if ((page.pageSize ?? 0) < 0) throw new AgentError("INVALID_ARGUMENT", "page_size must not be negative");
  const pageSize = pageSizeOf(page);
  const result = await store.listSnapshots(sessionId, { pageSize, ...(page.pageToken ? { pageToken: page.pageToken } : {}) }, options.storeContext);
  const snapshots = await Promise.all(
    result.snapshots.map((row) => shapeSnapshot(target, row, { ...options, includeState: page.includeState ?? false })),
  );
  return { snapshots, ...(result.nextPageToken ? { nextPageToken: result.nextPageToken } : {}) };
}

/**
 * Flips a pending row to aborted (an ordinary atomic save); the worker learns of
 * it by subscription. No-op on terminal rows. Resolves to the resulting status;
 * throws NOT_FOUND for an unknown snapshot.
 */
export async function abortSnapshot<S>(target: SnapshotAccessTarget<S>, snapshotId: string, options: SnapshotReadOptions = {}): Promise<SnapshotStatus> {
  const store = requireSubscriber(target);
  if (!snapshotId) throw new AgentError("INVALID_ARGUMENT", "snapshot_id is required");
  const saved = await store.saveSnapshot(
    snapshotId,
    (existing) =>
      existing?.status === "pending" ? { ...existing, status: "aborted", finishReason: "aborted", updatedAt: Date.now() } : null,
    options.storeContext,
  );
  if (saved) return "aborted";
  const row = await store.getSnapshot(snapshotId, options.storeContext);
  if (!row) throw new AgentError("NOT_FOUND", `snapshot "${snapshotId}" not found`);
  return effectiveStatus(row, target.liveness);
}

/**
 * Yields the snapshot's status now and on every change (no duplicates), and
 * ends after a terminal status. A pending row whose heartbeat goes stale yields
 * `expired` and ends. Throws NOT_FOUND for an unknown snapshot.
 */
export async function* watchSnapshot<S>(
  target: SnapshotAccessTarget<S>,
  snapshotId: string,
  signal: AbortSignal,
  options: SnapshotReadOptions = {},
): AsyncGenerator<SnapshotStatus> {
  const store = requireSubscriber(target);
  if (!snapshotId) throw new AgentError("INVALID_ARGUMENT", "snapshot_id is required");
  const first = await store.getSnapshot(snapshotId, options.storeContext);
  if (!first) throw new AgentError("NOT_FOUND", `snapshot "${snapshotId}" not found`);
  const subscription = new AbortController();
  const stop = () => subscription.abort();
  signal.addEventListener("abort", stop, { once: true });
  const statuses = store.subscribeStatus(snapshotId, subscription.signal, options.storeContext)[Symbol.asyncIterator]();
  let last: SnapshotStatus | undefined;
  try {
    const initial = effectiveStatus(first, target.liveness);
    last = initial;
    yield initial;
    if (isTerminalStatus(initial)) return;
    const checkEvery = Math.max(50, Math.floor(target.liveness.heartbeatTtlMs / 4));
    let next = statuses.next();
    while (!signal.aborted) {
      let timer: NodeJS.Timeout | undefined;
      const tick = new Promise<"tick">((resolve) => {
        timer = setTimeout(() => resolve("tick"), checkEvery);
        timer.unref();
      });
      const got = await Promise.race([next, tick]);
      clearTimeout(timer); // a status that won the race must not leave its expiry timer behind
      if (got === "tick") {
        const row = await store.getSnapshot(snapshotId, options.storeContext);
        const status = row ? effectiveStatus(row, target.liveness) : undefined;
        if (status === "expired") {
          yield status;
          return;
        }
        continue;
      }
      if (got.done) return;
      next = statuses.next();
      if (got.value === last) continue;
      last = got.value;
      yield got.value;
      if (isTerminalStatus(got.value)) return;
    }
  } finally {
    signal.removeEventListener("abort", stop);
    subscription.abort();
    void statuses.return?.();
  }
}
