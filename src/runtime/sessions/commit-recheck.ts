import { AgentError } from "../../errors/agent-error.js";
import type { HeadCommit, SessionHead, SessionStore, StoreCallContext } from "../../../stores/snapshot-store.js";

/** How often, and how far apart, the head is re-read after a commit of unknown outcome. */
const RECHECKS = 5;
const RECHECK_PAUSE_MS = 500;

/** True for a store error that says a commit's outcome is unknown (`details.outcome = "unknown"`). */
export function isUnknownOutcome(err: unknown): err is AgentError {
  return err instanceof AgentError && err.status === "UNAVAILABLE" && err.details?.outcome === "unknown";
}

/**
 * `store.commit`, except that a rejection whose outcome is unknown
 * (UNAVAILABLE with `details.outcome = "unknown"`: the store could not learn
 * whether its head write landed) is followed by reads of the head: when the
 * head holds the commit's token (`commitToken`) and points at its record,
 * the turn landed and that head is the answer; otherwise (after
 * {@link RECHECKS} reads, or when a read fails) the original error is
 * thrown, so a turn is failed only when its commit is not seen.
 */
export async function commitWithRecheck<S>(
  store: SessionStore<S>,
  commit: HeadCommit<S>,
  ctx?: StoreCallContext,
): Promise<SessionHead | undefined> {
  try {
    return await store.commit(commit, ctx);
  } catch (err) {
    if (!isUnknownOutcome(err) || commit.token === undefined) throw err;
    for (let attempt = 0; attempt < RECHECKS; attempt++) {
      const head = await store.getHead(commit.head.sessionId, ctx).catch(() => undefined);
      if (head?.commitToken === commit.token && head.headSnapshotId === commit.head.headSnapshotId) return head;
      if (head && head.version > commit.expectedVersion) break; // moved by another write: ours is not the head
      await new Promise((resolve) => setTimeout(resolve, RECHECK_PAUSE_MS));
    }
    throw err;
  }
}
