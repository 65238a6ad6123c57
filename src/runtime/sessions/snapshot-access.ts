import { AgentError } from "../../errors/agent-error.js";
import type { Principal } from "../../types/principal.js";
import type { SessionSnapshot, SnapshotStatus } from "../../types/snapshot.js";
import { isTerminalStatus } from "../../types/snapshot.js";
import type { SessionStore, SnapshotRecord, StoreCallContext } from "../../../stores/snapshot-store.js";
import { pageSizeOf } from "../../../stores/snapshot-order.js";
import { backgroundStoreOf } from "../background/background-store.js";
import { loadRecordState, ownedHead, ownedRecord, resolveRecordRef } from "./session-lookup.js";
import { pendingInputsOf } from "./pending-inputs.js";
import { effectiveStatus, livenessRecheckMs, type LivenessSettings } from "./snapshot-liveness.js";
import { applyStateTransform, transformContextOf, type ClientTransforms } from "../agents/state-transform.js";

/** What snapshot reads need from an agent. */
export interface SnapshotAccessTarget<S> {
  name: string;
  store?: SessionStore<S>;
  transforms: ClientTransforms<S>;
  liveness: LivenessSettings;
}

/** Options of a snapshot read. */
export interface SnapshotReadOptions {
  storeContext?: StoreCallContext;
  headers?: Headers;
  /** The authenticated caller, passed to the state transform. */
  principal?: Principal;
}

/** One page of a session's snapshots, newest first. */
export interface SnapshotPage<S = unknown> {
  snapshots: SessionSnapshot<S>[];
  /** Absent on the last page. */
  nextPageToken?: string;
}

function requireStore<S>(target: SnapshotAccessTarget<S>): SessionStore<S> {
  if (!target.store) {
    throw new AgentError("FAILED_PRECONDITION", `agent "${target.name}" is client-managed: it keeps no snapshots`);
  }
  return target.store;
}

/**
 * The client-facing view of a stored record: metadata, `expired` computed
 * from the heartbeat, a pending row's inputs (see `pendingInputsOf`; none
 * when the agent has a state transform), and (unless `includeState` is false) the state rebuilt
 * from its checkpoint and deltas with the state transform applied to a copy.
 * Transform errors fail closed.
 */
export async function shapeSnapshot<S>(
  target: SnapshotAccessTarget<S>,
  record: SnapshotRecord<S>,
  options: SnapshotReadOptions & { includeState?: boolean },
): Promise<SessionSnapshot<S>> {
  const status = effectiveStatus(record, target.liveness);
  // Inputs are not state, but a state transform decides what a reader may see of the conversation: none then.
  const pendingInputs = status === "pending" && !target.transforms.state ? pendingInputsOf(record.work) : undefined;
  const shaped: SessionSnapshot<S> = {
    snapshotId: record.snapshotId,
    sessionId: record.sessionId,
    ...(record.parentId ? { parentId: record.parentId } : {}),
    turnIndex: record.turnIndex,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    ...(record.heartbeatAt !== undefined ? { heartbeatAt: record.heartbeatAt } : {}),
    status,
    ...(record.finishReason ? { finishReason: record.finishReason } : {}),
    ...(record.error ? { error: structuredClone(record.error) } : {}),
    ...(record.usage ? { usage: { ...record.usage } } : {}),
    ...(record.edit ? { edit: structuredClone(record.edit) } : {}),
    ...(pendingInputs ? { pendingInputs } : {}),
  };
  // A pending row may hold the progress of its detached work (for a takeover): not a state to show yet.
  if (options.includeState === false || record.status === "pending") return shaped;
  const state = await loadRecordState(requireStore(target), record, options.storeContext);
  if (state) {
    const ctx = transformContextOf(target.name, options);
    const transformed = await applyStateTransform(target.transforms.state, state, ctx);
    if (transformed) shaped.state = transformed;
  }
  return shaped;
}

/**
 * Reads a snapshot by ID (with `sessionId`, asserted against it) or, with only
 * `sessionId`, the session's head snapshot. Throws AgentError INVALID_ARGUMENT
 * (neither given, session mismatch), NOT_FOUND (unknown, or another agent's or
 * owner's), FAILED_PRECONDITION (client-managed agent).
 */
export async function getSnapshot<S>(
  target: SnapshotAccessTarget<S>,
  ref: { snapshotId?: string; sessionId?: string },
  options: SnapshotReadOptions = {},
): Promise<SessionSnapshot<S>> {
  const store = requireStore(target);
  if (!ref.snapshotId && !ref.sessionId) throw new AgentError("INVALID_ARGUMENT", "set snapshot_id or session_id");
  const { record } = await resolveRecordRef(store, target.name, ref, options.storeContext);
  return shapeSnapshot(target, record, options);
}

/** A session's snapshots, newest first, paginated; states only with `includeState`. NOT_FOUND for a foreign session. */
export async function listSnapshots<S>(
  target: SnapshotAccessTarget<S>,
  sessionId: string,
  page: { pageSize?: number; pageToken?: string; includeState?: boolean },
  options: SnapshotReadOptions = {},
): Promise<SnapshotPage<S>> {
  const store = requireStore(target);
  if (!sessionId) throw new AgentError("INVALID_ARGUMENT", "session_id is required");
  if ((page.pageSize ?? 0) < 0) throw new AgentError("INVALID_ARGUMENT", "page_size must not be negative");
  await ownedHead(store, target.name, sessionId, options.storeContext);
  const pageSize = pageSizeOf(page);
  const includeState = page.includeState ?? false;
  const result = await store.listRecords(
    sessionId,
    { pageSize, includeState, ...(page.pageToken ? { pageToken: page.pageToken } : {}) },
    options.storeContext,
  );
  const snapshots = await Promise.all(
    result.records.map((record) => shapeSnapshot(target, record, { ...options, includeState })),
  );
  return { snapshots, ...(result.nextPageToken ? { nextPageToken: result.nextPageToken } : {}) };
}

/**
 * The record mutator of an abort: a pending record becomes aborted (the
 * worker sees it through its status subscription and stops); any other
 * record is left as it is (null skips the write).
 */
export function abortIfPending<S>(existing: SnapshotRecord<S>): SnapshotRecord<S> | null {
  return existing.status === "pending"
    ? { ...existing, status: "aborted", finishReason: "aborted", updatedAt: Date.now() }
    : null;
}

/**
 * Flips a pending record to aborted (an ordinary atomic update); the worker
 * learns of it by subscription. No-op on terminal records. Resolves to the
 * resulting status; throws NOT_FOUND for an unknown or foreign snapshot.
 */
export async function abortSnapshot<S>(
  target: SnapshotAccessTarget<S>,
  snapshotId: string,
  options: SnapshotReadOptions = {},
): Promise<SnapshotStatus> {
  const store = backgroundStoreOf(target.name, target.store, "abort");
  if (!snapshotId) throw new AgentError("INVALID_ARGUMENT", "snapshot_id is required");
  await ownedRecord(store, target.name, snapshotId, options.storeContext);
  const saved = await store.updateRecord(snapshotId, abortIfPending, options.storeContext);
  if (saved) return "aborted";
  const record = await store.getRecord(snapshotId, options.storeContext);
  if (!record) throw new AgentError("NOT_FOUND", `snapshot "${snapshotId}" not found`);
  return effectiveStatus(record, target.liveness);
}

/**
 * Yields the snapshot's status now and on every change (no duplicates), and
 * ends after a terminal status. A pending record whose heartbeat goes stale
 * yields `expired` and ends. Throws NOT_FOUND for an unknown or foreign
 * snapshot, and when the record disappears from the store mid-watch (seen by
 * the periodic re-check, every quarter heartbeat TTL).
 */
export async function* watchSnapshot<S>(
  target: SnapshotAccessTarget<S>,
  snapshotId: string,
  signal: AbortSignal,
  options: SnapshotReadOptions = {},
): AsyncGenerator<SnapshotStatus> {
  const store = backgroundStoreOf(target.name, target.store, "watch");
  if (!snapshotId) throw new AgentError("INVALID_ARGUMENT", "snapshot_id is required");
  const { record: first } = await ownedRecord(store, target.name, snapshotId, options.storeContext);
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
    const checkEvery = livenessRecheckMs(target.liveness);
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
        const record = await store.getRecord(snapshotId, options.storeContext);
        // The row vanished (its file was deleted, the database was restarted empty): nothing left to watch.
        if (!record) throw new AgentError("NOT_FOUND", `snapshot "${snapshotId}" no longer exists in the store`);
        const status = effectiveStatus(record, target.liveness);
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
