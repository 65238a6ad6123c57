// Shared helpers of the SessionClaim unit tests: claims on the memory store,
// records to commit, and a store that lets a test refuse or hold head writes.
import {
  DEFAULT_CLAIM_SETTINGS,
  SessionClaim,
  type ClaimIdentity,
  type ClaimSettings,
} from "../../src/runtime/sessions/session-claim.js";
import type { HeadCommit, SessionHead, SessionStore, SnapshotRecord } from "../../stores/snapshot-store.js";
import { uuidv7 } from "../../stores/uuid-v7.js";

/** A record for `sessionId` holding an empty checkpoint. */
export function record(sessionId: string, turnIndex = 0): SnapshotRecord {
  const now = Date.now();
  return {
    snapshotId: uuidv7(),
    sessionId,
    turnIndex,
    createdAt: now,
    updatedAt: now,
    status: "completed",
    checkpoint: { sessionId, messages: [], artifacts: [] },
    depth: 0,
    deltaBytes: 0,
    checkpointBytes: 2,
    checkpointTurn: turnIndex,
  };
}

/** A claim on `sessionId` by a new invocation, with the default lease timing overridden by `settings`. */
export function claimOf(
  store: SessionStore,
  sessionId: string,
  extra: Partial<ClaimIdentity<unknown>> = {},
  settings: Partial<ClaimSettings> = {},
): SessionClaim<unknown> {
  return new SessionClaim({
    store,
    sessionId,
    agent: "a",
    owner: "",
    invocationId: uuidv7(),
    settings: { ...DEFAULT_CLAIM_SETTINGS, ...settings },
    ...extra,
  });
}

/** A session created by a claim's first commit, then released. */
export async function existingSession(store: SessionStore): Promise<{ sessionId: string; snapshotId: string }> {
  const sessionId = uuidv7();
  const claim = claimOf(store, sessionId);
  claim.startFresh();
  const first = record(sessionId);
  await claim.commit(first);
  await claim.release();
  return { sessionId, snapshotId: first.snapshotId };
}

/** Rewrites the head of `sessionId` with `fields` replaced (a compare-and-set that must succeed). */
export async function patchHead(
  store: SessionStore,
  sessionId: string,
  fields: Partial<Omit<SessionHead, "version">>,
): Promise<SessionHead> {
  const head = await store.getHead(sessionId);
  if (!head) throw new Error(`no session ${sessionId}`);
  const { version, ...rest } = head;
  const next: Omit<SessionHead, "version"> = { ...rest, ...fields };
  for (const key of Object.keys(fields) as (keyof typeof fields)[]) {
    if (fields[key] === undefined) delete next[key];
  }
  const stored = await store.commit({ expectedVersion: version, head: next });
  if (!stored) throw new Error("patchHead: head changed meanwhile");
  return stored;
}

/** Decides what happens to one head write: "refuse" answers a version conflict without writing. */
export type CommitHook = (commit: HeadCommit) => "write" | "refuse" | Promise<"write" | "refuse">;

/** Runs after a head write was answered (`stored` undefined when refused). */
export type AfterCommit = (commit: HeadCommit, stored: SessionHead | undefined) => void | Promise<void>;

/**
 * `store` with every head write first shown to `hook` (which may refuse it or
 * hold it) and then to `after`, each call answered after a macrotask so that a
 * runaway retry loop cannot starve the test's timers; `commits` lists every
 * write attempted.
 */
export function hookedStore(
  store: SessionStore,
  hook: CommitHook = () => "write",
  after: AfterCommit = () => undefined,
): SessionStore & { commits: HeadCommit[] } {
  const commits: HeadCommit[] = [];
  const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  return {
    commits,
    getHead: async (id) => {
      await tick();
      return store.getHead(id);
    },
    commit: async (commit: HeadCommit) => {
      commits.push(commit);
      await tick();
      const stored = (await hook(commit)) === "refuse" ? undefined : await store.commit(commit);
      await after(commit, stored);
      return stored;
    },
    getRecord: (id) => store.getRecord(id),
    getChain: (id) => store.getChain(id),
    listRecords: (id, page) => store.listRecords(id, page),
    updateRecord: (id, mutator) => store.updateRecord(id, mutator),
  };
}
