import { uuidv7 } from "../../../stores/uuid-v7.js";
import { isChunkLog } from "../../../stores/chunk-log.js";
import type { SessionHead, SessionStore, SnapshotRecord, StoreCallContext } from "../../../stores/snapshot-store.js";
import type { DetachedWork } from "../../types/detached-work.js";
import type { Principal } from "../../types/principal.js";
import type { SessionState } from "../../types/session-state.js";
import { Invocation, type InvocationTarget } from "../invocations/invocation.js";
import { SessionClaim, type ClaimSettings } from "../sessions/session-claim.js";
import { loadRecordState } from "../sessions/session-lookup.js";
import { takeoverDue } from "../sessions/snapshot-liveness.js";
import { chainPosition, type CommittedPoint } from "../sessions/turn-record.js";
import type { AdoptedWork } from "./adopted-work.js";

/** What a takeover needs of the agent: an invocation target with its session lease timing. */
export interface TakeoverTarget<S> extends InvocationTarget<S> {
  store?: SessionStore<S>;
  claims: ClaimSettings;
}

/**
 * Takes over the detached work of `row`, the pending head record of `head`,
 * whose worker is presumed dead ({@link takeoverDue}), and resumes it in this
 * process: the session lease moves to a new invocation by a compare-and-set
 * on `head` (of instances racing, exactly one wins), the row records the new
 * run (fenced on the dead run still being its last, so a late old worker's
 * writes are refused), and the remaining inputs run from the last completed
 * turn, the state and chunk numbering carried on. A turn that was cut
 * continues from its last checkpoint (`TurnContext.checkpoint`), or restarts
 * from its start without one: what ran after the checkpoint runs again
 * (at-least-once). Resolves to true when
 * this call took the work over, false when another instance did or the row
 * changed. Rejects with the store's error (the lease is then released).
 */
export async function takeOverWork<S>(
  target: TakeoverTarget<S>,
  head: SessionHead,
  row: SnapshotRecord<S>,
): Promise<boolean> {
  const store = target.store;
  const work = row.work;
  const dead = work?.runs.at(-1);
  if (!store || !work || !dead || !takeoverDue(row, target.liveness)) return false;
  const ctx: StoreCallContext = { tenant: head.owner };
  const invocationId = uuidv7();
  const claim = new SessionClaim<S>({
    store,
    sessionId: head.sessionId,
    agent: target.name,
    owner: head.owner,
    invocationId,
    ctx,
    settings: target.claims,
  });
  if (!(await claim.takeOver(head, dead.invocationId))) return false;
  let adopted: DetachedWork;
  try {
    const now = Date.now();
    const written = await store.updateRecord(
      row.snapshotId,
      (existing) => {
        const current = existing.work;
        if (current?.runs.at(-1)?.invocationId !== dead.invocationId || !takeoverDue(existing, target.liveness, now))
          return null;
        const run = { invocationId, instance: target.instance, startedAt: now, fromInput: current.completed };
        return { ...existing, heartbeatAt: now, work: { ...current, runs: [...current.runs, run] } };
      },
      ctx,
    );
    if (!written?.work) {
      await claim.release();
      return false;
    }
    adopted = written.work;
    await resume(target, store, claim, written as SnapshotRecord<S> & { work: DetachedWork }, ctx);
  } catch (err) {
    await claim.release();
    throw err;
  }
  target.events?.workTakenOver?.({
    agent: target.name,
    sessionId: row.sessionId,
    snapshotId: row.snapshotId,
    from: dead.instance,
    instance: target.instance,
    completedInputs: adopted.completed,
    remainingInputs: adopted.inputs.length - adopted.completed,
  });
  return true;
}

/** Starts the invocation that runs the rest of `row`'s work under `claim`. */
async function resume<S>(
  target: TakeoverTarget<S>,
  store: SessionStore<S>,
  claim: SessionClaim<S>,
  row: SnapshotRecord<S> & { work: DetachedWork },
  ctx: StoreCallContext,
): Promise<void> {
  const work = row.work;
  const parent = await parentPoint(store, row, ctx);
  const reached = await loadRecordState(store, row, ctx);
  // A row that notes an edit builds on an edited copy of its parent's state: the recorded initial state.
  const initial = work.initialState as SessionState<S> | undefined;
  const base: SessionState<S> = reached ??
    (row.edit ? initial : undefined) ??
    parent?.state ??
    initial ?? { messages: [], artifacts: [] };
  const principal: Principal = Object.freeze({
    subject: work.principal.subject,
    tenant: work.principal.tenant,
    claims: Object.freeze({ ...work.principal.claims }),
  });
  const adopted: AdoptedWork<S> = {
    snapshotId: row.snapshotId,
    parent,
    ...(row.usage ? { usage: row.usage } : {}),
    // A turn cut after a checkpoint continues (its message is in the state); one cut before restarts.
    inputs: work.inTurn ? [{}, ...work.inputs.slice(work.completed + 1)] : work.inputs.slice(work.completed),
    continuesTurn: work.inTurn === true,
    supersededAfter: work.lastSequence,
    lastRecordedSequence: await claimedSequence(store, row, target.liveness.chunkRetentionMs, ctx),
    run: work.runs.length - 1,
  };
  new Invocation(
    target,
    {
      state: { ...structuredClone(base), sessionId: row.sessionId },
      ...(parent ? { parent } : {}),
      nextTurnIndex: work.firstTurnIndex + work.completed,
      claim,
    },
    { storeContext: ctx, principal },
    adopted,
  );
}

/** The committed snapshot the row builds on, or undefined when the session had none. */
async function parentPoint<S>(
  store: SessionStore<S>,
  row: SnapshotRecord<S>,
  ctx: StoreCallContext,
): Promise<CommittedPoint<S> | undefined> {
  if (!row.parentId) return undefined;
  const record = await store.getRecord(row.parentId, ctx);
  const state = record ? await loadRecordState(store, record, ctx) : undefined;
  if (!record || !state) return undefined;
  return {
    snapshotId: record.snapshotId,
    createdAt: record.createdAt,
    state: { ...state, sessionId: row.sessionId },
    position: chainPosition(record),
  };
}

/**
 * The sequence after which the takeover numbers its chunks. A store that
 * fences runs (`claimChunks`) gets the takeover marker appended at its log's
 * next free sequence here, so that from then on the dead run's late appends
 * are refused; the invocation then emits that marker at the same sequence
 * (a repeated append of this run: done).
 */
async function claimedSequence<S>(
  store: SessionStore<S>,
  row: SnapshotRecord<S> & { work: DetachedWork },
  retentionMs: number,
  ctx: StoreCallContext,
): Promise<number> {
  const last = await lastRecordedSequence(store, row, ctx);
  if (!isChunkLog(store) || !store.claimChunks) return last;
  const work = row.work;
  const key = { sessionId: row.sessionId, snapshotId: row.snapshotId, run: work.runs.length - 1 };
  const turnIndex = work.firstTurnIndex + work.completed;
  const marker = (sequence: number) => ({ takeover: { supersededAfter: work.lastSequence, turnIndex }, sequence });
  return (await store.claimChunks(key, last, marker, Date.now() + retentionMs, ctx)) - 1;
}

/** The last sequence the work's chunk log holds (at least the last completed turn's TurnEnd). */
async function lastRecordedSequence<S>(
  store: SessionStore<S>,
  row: SnapshotRecord<S> & { work: DetachedWork },
  ctx: StoreCallContext,
): Promise<number> {
  let last = row.work.lastSequence;
  if (!isChunkLog(store)) return last;
  const key = { sessionId: row.sessionId, snapshotId: row.snapshotId };
  for (;;) {
    const chunks = await store.readChunks(key, last, 1_000, ctx);
    if (chunks.length === 0) return last;
    last = chunks[chunks.length - 1]!.sequence;
  }
}
