/**
 * Builds session-ledger records exactly as the runtime does (diffState +
 * recordStateFields on the parent record, shared frozen messages), for the
 * store conformance suite and its child-process writer. No vitest imports:
 * the child process loads this file too.
 */
import { userText, type Message } from "../../src/types/content.js";
import type { SessionState } from "../../src/types/session-state.js";
import { recordStateFields, type CheckpointPolicy } from "../../stores/ledger/checkpoint-policy.js";
import { deepFreeze } from "../../stores/ledger/frozen-value.js";
import { diffState } from "../../stores/ledger/state-delta.js";
import type { SessionHead, SessionStore, StateDelta } from "../../stores/snapshot-store.js";
import { commitOf, type CounterRecord, type CounterState } from "./snapshot-factory.js";

/** A frozen user message, shared by every state that holds it (as the runtime shares messages). */
export function frozenMessage(text: string): Message {
  return deepFreeze(userText(text));
}

/**
 * The record for one turn: `nextState` stored as a delta on `parent` (whose
 * state is `prevState`) or as a checkpoint when `policy` says so; a new
 * session (`parent` undefined) always checkpoints.
 */
export function turnRecord(args: {
  snapshotId: string;
  sessionId: string;
  parent: CounterRecord | undefined;
  prevState: SessionState<CounterState>;
  nextState: SessionState<CounterState>;
  turnIndex: number;
  createdAt: number;
  policy: CheckpointPolicy;
}): CounterRecord {
  const { snapshotId, sessionId, parent, prevState, nextState, turnIndex, createdAt, policy } = args;
  const delta = diffState(prevState, nextState);
  const fields = recordStateFields(parent, delta, () => nextState, turnIndex, policy);
  return {
    snapshotId,
    sessionId,
    ...(parent ? { parentId: parent.snapshotId } : {}),
    turnIndex,
    createdAt,
    updatedAt: createdAt,
    status: "completed",
    ...fields,
  };
}

/**
 * One session driven the way the runtime drives it: it keeps the current
 * state, the last committed record and head, and commits each next state as a
 * new record on top of them.
 */
export class RuntimeSession {
  state: SessionState<CounterState>;
  record: CounterRecord | undefined;
  head: SessionHead | undefined;
  turnIndex = 0;

  readonly sessionId: string;
  private readonly store: SessionStore<CounterState>;
  private readonly policy: CheckpointPolicy;
  private readonly clock: () => number;

  // Fields spelled out (no parameter properties): child writers load this file with Node's type
  // stripping (see typeScriptScriptArgs in test/harness/agentd-process.ts).
  constructor(
    store: SessionStore<CounterState>,
    sessionId: string,
    policy: CheckpointPolicy,
    clock: () => number = () => Date.now(),
  ) {
    this.store = store;
    this.sessionId = sessionId;
    this.policy = policy;
    this.clock = clock;
    this.state = { sessionId, messages: [], artifacts: [] };
  }

  /** Commits `next` as the next turn (ID `snapshotId`); returns the record written. */
  async commit(snapshotId: string, next: SessionState<CounterState>): Promise<CounterRecord> {
    const record = turnRecord({
      snapshotId,
      sessionId: this.sessionId,
      parent: this.record,
      prevState: this.state,
      nextState: next,
      turnIndex: this.turnIndex,
      createdAt: this.clock(),
      policy: this.policy,
    });
    const head = await this.store.commit(commitOf(this.head, record));
    if (!head) throw new Error(`turn ${this.turnIndex} (${snapshotId}) conflicted unexpectedly`);
    this.head = head;
    this.record = record;
    this.state = next;
    this.turnIndex++;
    return record;
  }
}

/** Writes deltas only (the contending writers never need a state to checkpoint). */
export const NEVER_CHECKPOINT: CheckpointPolicy = {
  minDeltaBytes: Number.MAX_SAFE_INTEGER,
  ratio: 1,
  maxDepth: Number.MAX_SAFE_INTEGER,
};

/** One acknowledged commit of a contending writer. */
export interface WriterAck {
  snapshotId: string;
  /** Epoch ms when the commit resolved. */
  at: number;
}

/**
 * Creates the session the contending writers append to: a checkpoint record
 * `root` holding one message (`root`).
 */
export async function createContendedSession(
  store: SessionStore<CounterState>,
  sessionId: string,
): Promise<CounterRecord> {
  const root = turnRecord({
    snapshotId: `${sessionId}-root`,
    sessionId,
    parent: undefined,
    prevState: { sessionId, messages: [], artifacts: [] },
    nextState: { sessionId, messages: [frozenMessage(`${sessionId}-root`)], artifacts: [], custom: { n: 0 } },
    turnIndex: 0,
    createdAt: Date.now(),
    policy: NEVER_CHECKPOINT,
  });
  const head = await store.commit(commitOf(undefined, root));
  if (!head) throw new Error(`session ${sessionId} exists already`);
  return root;
}

/**
 * Waits until record `snapshotId` exists (records exist only once committed):
 * how the writers of two processes make sure their commits interleave.
 */
async function awaitCommitted(
  store: SessionStore<CounterState>,
  sessionId: string,
  snapshotId: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await onHeadChain(store, sessionId, snapshotId))) {
    if (Date.now() > deadline) throw new Error(`${snapshotId} was not committed within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Whether `snapshotId` is on the session's chain (the head or one of its ancestors). A record
 * that merely exists is not enough: a store may write a record before the head's
 * compare-and-set and remove it when that fails, so another process can read a record that
 * never gets committed.
 */
async function onHeadChain(store: SessionStore<CounterState>, sessionId: string, snapshotId: string): Promise<boolean> {
  const record = await store.getRecord(snapshotId);
  const head = await store.getHead(sessionId);
  if (!record || !head) return false;
  let current = await store.getRecord(head.headSnapshotId);
  while (current && current.turnIndex > record.turnIndex && current.parentId !== undefined) {
    current = await store.getRecord(current.parentId);
  }
  return current?.snapshotId === snapshotId;
}

/**
 * One writer racing others on a session the way independent runtimes do:
 * read the head, build a record on top of the head's snapshot (a delta that
 * keeps every message and appends one whose text is the record's ID), commit
 * with the head's version; on a conflict start over from the head. Every turn
 * keeps its snapshot ID across retries (a lost commit must leave nothing
 * behind, or the retry fails with ALREADY_EXISTS). Resolves to the
 * acknowledged commits in order. With `peerTag`, the writer's second turn
 * waits until the peer's first writer (`<peerTag>-w0`) has committed its first
 * turn, so two groups of writers (two processes) are sure to interleave: each
 * group commits before and after the other's first commit.
 */
export async function contendingWriter(
  store: SessionStore<CounterState>,
  sessionId: string,
  tag: string,
  turns: number,
  peerTag?: string,
): Promise<WriterAck[]> {
  const acks: WriterAck[] = [];
  for (let k = 0; k < turns; k++) {
    if (k === 1 && peerTag !== undefined) await awaitCommitted(store, sessionId, `${peerTag}-w0-t0`);
    const snapshotId = `${tag}-t${k}`;
    for (let attempt = 0; ; attempt++) {
      if (attempt >= 5_000) throw new Error(`${snapshotId}: still conflicting after ${attempt} attempts`);
      const head = await store.getHead(sessionId);
      if (!head) throw new Error(`session ${sessionId} has no head`);
      const parent = await store.getRecord(head.headSnapshotId);
      if (!parent) throw new Error(`head snapshot ${head.headSnapshotId} is not readable`);
      // The chain is linear, one message per record: the parent's state holds turnIndex + 1 messages.
      const delta: StateDelta<CounterState> = {
        keepMessages: parent.turnIndex + 1,
        appendMessages: [frozenMessage(snapshotId)],
      };
      const turnIndex = parent.turnIndex + 1;
      const fields = recordStateFields(
        parent,
        delta,
        () => {
          throw new Error("contending writers never checkpoint");
        },
        turnIndex,
        NEVER_CHECKPOINT,
      );
      const now = Date.now();
      const record: CounterRecord = {
        snapshotId,
        sessionId,
        parentId: parent.snapshotId,
        turnIndex,
        createdAt: now,
        updatedAt: now,
        status: "completed",
        ...fields,
      };
      const committed = await store.commit(commitOf(head, record));
      if (committed) {
        acks.push({ snapshotId, at: Date.now() });
        break;
      }
    }
  }
  return acks;
}
