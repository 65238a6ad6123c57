import type { SessionState } from "../../src/types/session-state.js";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import { stateOfChain } from "../../stores/ledger/state-chain.js";
import { jsonBytes } from "../../stores/ledger/state-delta.js";
import type { HeadCommit, SessionHead, SessionStore, SnapshotRecord } from "../../stores/snapshot-store.js";

/** Custom state used by the store tests. */
export interface CounterState {
  n: number;
  items?: string[];
}

export type CounterRecord = SnapshotRecord<CounterState>;

/** A fixed epoch so tests that order by createdAt are deterministic. */
export const T0 = 1_700_000_000_000;

/** A small whole state for a checkpoint. */
export function counterState(sessionId: string, n = 0): SessionState<CounterState> {
  return { sessionId, messages: [], artifacts: [], custom: { n } };
}

/**
 * A complete checkpoint record (status completed, turn 0, state `{n: 0}`).
 * `overrides` replace any field; a `checkpoint` override recomputes
 * `checkpointBytes`, a `turnIndex` override moves `checkpointTurn` with it.
 */
export function checkpointRecord(
  sessionId: string,
  snapshotId: string,
  overrides: Partial<CounterRecord> = {},
): CounterRecord {
  const checkpoint = overrides.checkpoint ?? counterState(sessionId);
  const turnIndex = overrides.turnIndex ?? 0;
  const createdAt = overrides.createdAt ?? T0;
  return {
    snapshotId,
    sessionId,
    turnIndex,
    createdAt,
    updatedAt: createdAt,
    status: "completed" as SnapshotStatus,
    checkpoint,
    depth: 0,
    deltaBytes: 0,
    checkpointBytes: jsonBytes(checkpoint),
    checkpointTurn: turnIndex,
    ...overrides,
  };
}

/** A pending record (a detached run not yet finalized): neither checkpoint nor delta. */
export function pendingRecord(
  sessionId: string,
  snapshotId: string,
  overrides: Partial<CounterRecord> = {},
): CounterRecord {
  const createdAt = overrides.createdAt ?? T0;
  const turnIndex = overrides.turnIndex ?? 0;
  return {
    snapshotId,
    sessionId,
    turnIndex,
    createdAt,
    updatedAt: createdAt,
    status: "pending",
    depth: 0,
    deltaBytes: 0,
    checkpointBytes: 0,
    checkpointTurn: turnIndex,
    ...overrides,
  };
}

/**
 * The head that commits `record` on top of `previous` (or creates the session
 * when `previous` is undefined): head moves to the record, turnCount + 1,
 * lease and waiters carried over.
 */
export function headAfter(
  previous: SessionHead | undefined,
  record: Pick<CounterRecord, "snapshotId" | "sessionId" | "createdAt">,
): Omit<SessionHead, "version"> {
  if (!previous) {
    return {
      sessionId: record.sessionId,
      agent: "counter",
      owner: "",
      headSnapshotId: record.snapshotId,
      turnCount: 1,
      createdAt: record.createdAt,
      updatedAt: record.createdAt,
    };
  }
  const { version: _version, ...rest } = previous;
  return { ...rest, headSnapshotId: record.snapshotId, turnCount: previous.turnCount + 1, updatedAt: record.createdAt };
}

/** The commit of `record` on top of `previous` (see {@link headAfter}). */
export function commitOf(previous: SessionHead | undefined, record: CounterRecord): HeadCommit<CounterState> {
  return { expectedVersion: previous?.version ?? 0, head: headAfter(previous, record), record };
}

/** Commits `record` on top of `previous` and returns the new head; throws when the store reports a conflict. */
export async function commitRecord(
  store: SessionStore<CounterState>,
  previous: SessionHead | undefined,
  record: CounterRecord,
): Promise<SessionHead> {
  const head = await store.commit(commitOf(previous, record));
  if (!head)
    throw new Error(`commit of ${record.snapshotId} on version ${previous?.version ?? 0} conflicted unexpectedly`);
  return head;
}

/** Every record of a session, following page tokens (newest first). */
export async function allRecords(
  store: SessionStore<CounterState>,
  sessionId: string,
  pageSize?: number,
): Promise<CounterRecord[]> {
  const out: CounterRecord[] = [];
  let pageToken: string | undefined;
  let pages = 0;
  do {
    const page = await store.listRecords(sessionId, {
      ...(pageSize ? { pageSize } : {}),
      ...(pageToken ? { pageToken } : {}),
    });
    out.push(...page.records);
    pageToken = page.nextPageToken;
    if (pageToken && ++pages > 10_000) throw new Error(`listRecords(${sessionId}) keeps returning page tokens`);
  } while (pageToken);
  return out;
}

/** The snapshot IDs of `records`, in order. */
export const ids = (records: readonly { snapshotId: string }[]): string[] => records.map((r) => r.snapshotId);

/** The state of `snapshotId` as a reader gets it: its chain, then the chain's state. */
export async function readState(
  store: SessionStore<CounterState>,
  snapshotId: string,
): Promise<SessionState<CounterState> | undefined> {
  const chain = await store.getChain(snapshotId);
  if (!chain) throw new Error(`no chain for ${snapshotId}`);
  return stateOfChain(chain);
}

/** Resolves once `predicate` holds (polled every 10 ms), rejects after `timeoutMs` (a safety net for a loaded machine). */
export async function eventually(predicate: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
