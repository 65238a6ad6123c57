import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionState } from "../../src/types/session-state.js";
import type { SnapshotRecord } from "../snapshot-store.js";
import { deepFreeze } from "./frozen-value.js";
import { applyDeltaTo, workingCopyOf, type WorkingState } from "./state-delta.js";

/** Reads one record by ID (a store's getRecord). */
export type RecordReader<S> = (snapshotId: string) => Promise<SnapshotRecord<S> | undefined>;

function broken(snapshotId: string, missing: string): AgentError {
  return new AgentError(
    "DATA_LOSS",
    `snapshot "${snapshotId}" cannot be read: its ancestor "${missing}" is missing from the store or holds no state (restore the store from a backup)`,
  );
}

/**
 * The chain from the nearest checkpoint up to `snapshotId`, oldest first,
 * by following parent links one read at a time. What a store's `getChain`
 * does when it has no faster way. Undefined when `snapshotId` does not exist;
 * DATA_LOSS when an ancestor is missing or the links loop.
 */
export async function walkChain<S>(
  read: RecordReader<S>,
  snapshotId: string,
): Promise<SnapshotRecord<S>[] | undefined> {
  const first = await read(snapshotId);
  if (!first) return undefined;
  const chain = [first];
  let current = first;
  while (!current.checkpoint && current.delta) {
    const parentId = current.parentId;
    if (!parentId || chain.length > first.depth) throw broken(snapshotId, parentId ?? "(none)");
    const parent = await read(parentId);
    if (!parent) throw broken(snapshotId, parentId);
    chain.push(parent);
    current = parent;
  }
  return chain.reverse();
}

/**
 * Picks the chain ending at `snapshotId` out of `candidates` (e.g. every
 * record of the session in the turn range of the checkpoint), following
 * parent links as {@link walkChain} does. Undefined when `snapshotId` is not
 * among them; DATA_LOSS when a link is missing.
 */
export function chainFrom<S>(
  candidates: Iterable<SnapshotRecord<S>>,
  snapshotId: string,
): Promise<SnapshotRecord<S>[] | undefined> {
  const byId = new Map<string, SnapshotRecord<S>>();
  for (const r of candidates) byId.set(r.snapshotId, r);
  return walkChain(async (id) => byId.get(id), snapshotId);
}

/**
 * The state of the last record of `chain` (oldest first, starting at a
 * checkpoint), or undefined when that record holds no state (pending).
 * Replays the deltas into one working copy, so the cost is the size of the
 * checkpoint plus the deltas, not one history copy per delta. The result is
 * deep-frozen; callers that mutate must copy.
 */
export function stateOfChain<S>(chain: readonly SnapshotRecord<S>[]): SessionState<S> | undefined {
  const last = chain[chain.length - 1];
  if (!last || (!last.checkpoint && !last.delta)) return undefined;
  // The chain must start at a checkpoint: an ancestor without state (pending, or a checkpoint whose body is lost) breaks it.
  if (!chain[0]!.checkpoint) throw broken(last.snapshotId, chain[0]!.snapshotId);
  let working: WorkingState | undefined;
  for (const record of chain) {
    if (record.checkpoint) working = workingCopyOf(deepFreeze(record.checkpoint));
    else if (record.delta) applyDeltaTo(working!, record.delta);
  }
  const state: SessionState<S> = {
    sessionId: working!.sessionId ?? last.sessionId,
    messages: working!.messages,
    artifacts: working!.artifacts,
  };
  if (working!.custom !== undefined) state.custom = working!.custom as S;
  return deepFreeze(state);
}
