import { AgentError } from "../../errors/agent-error.js";
import type { SessionState } from "../../types/session-state.js";
import type { SessionHead, SessionStore, SnapshotRecord, StoreCallContext } from "../../../stores/snapshot-store.js";
import { stateOfChain } from "../../../stores/ledger/state-chain.js";

/** The owner a call acts for: its tenant, or "" (anonymous). */
export function ownerOf(ctx: StoreCallContext | undefined): string {
  return ctx?.tenant ?? "";
}

/** True when `head` has passed its expiry time (an expired session reads as gone before the sweep removes it). */
export function isExpired(head: SessionHead, now: number = Date.now()): boolean {
  return head.expiresAt !== undefined && head.expiresAt <= now;
}

/** True when `head` is the caller's (owner), live (not expired) and, when `agent` is given, that agent's. */
export function ownsSession(
  head: SessionHead | undefined,
  agent: string | undefined,
  ctx: StoreCallContext | undefined,
): head is SessionHead {
  return (
    head !== undefined &&
    (agent === undefined || head.agent === agent) &&
    head.owner === ownerOf(ctx) &&
    !isExpired(head)
  );
}

/** True when `head` belongs to `agent` and the caller's owner. */
function owns(head: SessionHead | undefined, agent: string, ctx: StoreCallContext | undefined): head is SessionHead {
  return ownsSession(head, agent, ctx);
}

/** NOT_FOUND for a snapshot the caller may not see (same answer as for one that does not exist). */
export function snapshotNotFound(snapshotId: string): AgentError {
  return new AgentError("NOT_FOUND", `snapshot "${snapshotId}" not found`);
}

/** NOT_FOUND for a session the caller may not see (same answer as for one that does not exist). */
export function sessionNotFound(sessionId: string): AgentError {
  return new AgentError("NOT_FOUND", `session "${sessionId}" not found`);
}

/** The session's head when it belongs to `agent` and the caller; NOT_FOUND otherwise (whether it exists or not). */
export async function ownedHead<S>(
  store: SessionStore<S>,
  agent: string,
  sessionId: string,
  ctx?: StoreCallContext,
): Promise<SessionHead> {
  const head = await store.getHead(sessionId, ctx);
  if (!owns(head, agent, ctx)) throw sessionNotFound(sessionId);
  return head;
}

/**
 * The record when its session belongs to `agent` and the caller; NOT_FOUND
 * otherwise, so another agent's or owner's snapshot is indistinguishable from
 * a missing one — in its answer and in the work done for it: with
 * `store.headOfRecord` the owner is checked before the record is read (an
 * unknown and a foreign ID each cost one head lookup, no record read);
 * without it an unknown ID also looks up a head, as a foreign one does.
 */
export async function ownedRecord<S>(
  store: SessionStore<S>,
  agent: string,
  snapshotId: string,
  ctx?: StoreCallContext,
): Promise<{ record: SnapshotRecord<S>; head: SessionHead }> {
  if (store.headOfRecord) {
    const head = await store.headOfRecord(snapshotId, ctx);
    if (!owns(head, agent, ctx)) throw snapshotNotFound(snapshotId);
    const record = await store.getRecord(snapshotId, ctx);
    if (record?.sessionId !== head.sessionId) throw snapshotNotFound(snapshotId);
    return { record, head };
  }
  const record = await store.getRecord(snapshotId, ctx);
  // An unknown ID looks up a head too (its own ID as a session ID; the answer is ignored), as a foreign one does.
  const head = await store.getHead(record ? record.sessionId : snapshotId, ctx);
  if (!record || !owns(head, agent, ctx)) throw snapshotNotFound(snapshotId);
  return { record, head };
}

/**
 * The record `ref` names for `agent` and the caller: by snapshot ID (asserted
 * to belong to `sessionId` when that is set too), else the session's head
 * snapshot. NOT_FOUND for unknown or foreign IDs, INVALID_ARGUMENT for a
 * session mismatch.
 */
export async function resolveRecordRef<S>(
  store: SessionStore<S>,
  agent: string,
  ref: { snapshotId?: string; sessionId?: string },
  ctx?: StoreCallContext,
): Promise<{ record: SnapshotRecord<S>; head: SessionHead }> {
  if (ref.snapshotId) {
    const found = await ownedRecord(store, agent, ref.snapshotId, ctx);
    if (ref.sessionId && found.record.sessionId !== ref.sessionId) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `snapshot "${ref.snapshotId}" belongs to another session than "${ref.sessionId}"`,
      );
    }
    return found;
  }
  const head = await ownedHead(store, agent, ref.sessionId!, ctx);
  return { record: await headRecord(store, head, ctx), head };
}

/**
 * Whether the session is gone when read again: a record or chain found
 * missing went with a DeleteSession that landed between a call's reads (a
 * store reads head, record and chain in separate queries), not lost data.
 */
async function deletedMeanwhile(store: SessionStore, sessionId: string, ctx?: StoreCallContext): Promise<boolean> {
  return (await store.getHead(sessionId, ctx)) === undefined;
}

/**
 * The record a session's head points at. NOT_FOUND when the session was
 * deleted after the caller read its head (the head is gone when read
 * again); DATA_LOSS when the head is still there and the store lost the
 * record.
 */
export async function headRecord<S>(
  store: SessionStore<S>,
  head: SessionHead,
  ctx?: StoreCallContext,
): Promise<SnapshotRecord<S>> {
  const record = await store.getRecord(head.headSnapshotId, ctx);
  if (record) return record;
  if (await deletedMeanwhile(store, head.sessionId, ctx)) throw sessionNotFound(head.sessionId);
  throw new AgentError(
    "DATA_LOSS",
    `session "${head.sessionId}" points at snapshot "${head.headSnapshotId}", which is missing from the store`,
  );
}

/**
 * The state of `record` (frozen; undefined for a pending record), rebuilt
 * from its checkpoint and deltas. NOT_FOUND when the record, or an ancestor
 * of its chain, went with its session, deleted while the chain was read (a
 * store reads a chain in more than one step); DATA_LOSS when the session is
 * still there and its chain is broken.
 */
export async function loadRecordState<S>(
  store: SessionStore<S>,
  record: SnapshotRecord<S>,
  ctx?: StoreCallContext,
): Promise<SessionState<S> | undefined> {
  if (record.checkpoint) return stateOfChain([record]);
  if (!record.delta) return undefined;
  let chain: SnapshotRecord<S>[] | undefined;
  try {
    chain = await store.getChain(record.snapshotId, ctx);
  } catch (err) {
    const lost = err instanceof AgentError && err.status === "DATA_LOSS";
    if (lost && (await deletedMeanwhile(store, record.sessionId, ctx))) throw snapshotNotFound(record.snapshotId);
    throw err;
  }
  if (!chain) throw snapshotNotFound(record.snapshotId);
  return stateOfChain(chain);
}
