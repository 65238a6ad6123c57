import type { Operation } from "fast-json-patch";
import type { Artifact, Message } from "../src/types/content.js";
import type { SessionState } from "../src/types/session-state.js";
import type { SessionSnapshot, SnapshotStatus } from "../src/types/snapshot.js";
import type { Usage } from "../src/types/usage.js";
import type { DetachedWork } from "../src/types/detached-work.js";

/**
 * Version of the stored data layout (session heads + snapshot records with
 * per-turn deltas). A store opened on data written in another format fails at
 * start with FAILED_PRECONDITION.
 */
export const STORE_FORMAT_VERSION = 2;

/**
 * Per-call context a store may use, e.g. to pick a tenant's path prefix or
 * collection. The server fills it from the request; in-process callers may
 * pass their own. The runtime also stamps `tenant` as the owner of sessions it
 * creates and refuses (NOT_FOUND) sessions of another owner.
 */
export interface StoreCallContext {
  /** Tenant identifier (the session owner); empty or unset for the anonymous owner. */
  tenant?: string;
  /**
   * The caller's deadline (epoch ms), when it has one: a store that retries
   * across a failover (MongoDB) gives up by then. Unset: the store's own
   * retry budget applies.
   */
  deadline?: number;
}

/** The invocation that holds a session (see the busy-session policy). */
export interface SessionLease {
  /** ID of the holding invocation (also what a rejected caller is told). */
  invocationId: string;
  /** Epoch ms after which the lease is void (its holder died or stalled); refreshed while it runs. */
  expiresAt: number;
  /**
   * The request ID of the input the holder is running (as of its last lease
   * write), if that input carried one: a retry of the same input waits for
   * the holder instead of being refused as busy.
   */
  requestId?: string;
  /**
   * The process that holds the lease, when it said so: lets another process
   * tell that the holder is dead (see `LeaseHolder`) and take the session at
   * once instead of waiting for `expiresAt`. Stored as is.
   */
  holder?: LeaseHolder;
}

/**
 * Which process holds a lease. Two processes with the same `machine` share
 * one process table, so one can ask whether the other's `pid` still runs;
 * `incarnation` is unique per process start, so a restarted instance (same
 * `instance`, perhaps even the same pid) is told apart from its predecessor.
 */
export interface LeaseHolder {
  /** The instance's name (`--instance-id`, default `<hostname>:<pid>`). */
  instance: string;
  /** The host and process namespace the pid belongs to (hostname, boot ID, PID namespace). */
  machine: string;
  /** The holder's process ID on `machine`. */
  pid: number;
  /** Random, new at every process start. */
  incarnation: string;
}

/**
 * A request ID the session committed a turn for (see `AgentInput.requestId`):
 * kept in the head, most recent last, for a bounded window, so a retried input
 * is recognised with the head the runtime already holds (no extra read).
 */
export interface CommittedRequest {
  /** The client's request ID (idempotency key) of the input. */
  requestId: string;
  /** The record the input's turn committed (it carries the input's fingerprint). */
  snapshotId: string;
  /** Epoch ms of the commit; entries older than the window are dropped. */
  committedAt: number;
}

/** An invocation waiting (ENQUEUE) for a busy session, in arrival order. */
export interface SessionWaiter {
  invocationId: string;
  /** Epoch ms after which the entry is void (the waiter gave up or died); refreshed while it waits. */
  expiresAt: number;
}

/**
 * One record per session: who owns it, which snapshot is its head, and who
 * holds it now. Every head write is a compare-and-set on `version`.
 */
export interface SessionHead {
  sessionId: string;
  /** Name of the agent the session belongs to; other agents see NOT_FOUND. */
  agent: string;
  /** Owner (tenant); empty until authentication fills it. Other owners see NOT_FOUND. */
  owner: string;
  /** The snapshot new turns build on (the most recent commit, or an explicit branch point). */
  headSnapshotId: string;
  /** Number of snapshot records committed to the session (every branch). */
  turnCount: number;
  /** Incremented by every head write; the compare-and-set key. */
  version: number;
  createdAt: number;
  updatedAt: number;
  /** The invocation running on the session, if any. */
  lease?: SessionLease;
  /** ENQUEUE waiters, first come first served. */
  waiters?: SessionWaiter[];
  /** Labels (string → string) set at creation or by UpdateSession (see `validateLabels`). */
  labels?: Readonly<Record<string, string>>;
  /** Idle time-to-live of this session (ms): it expires ttlMs after its last head write. Unset: never expires. */
  ttlMs?: number;
  /**
   * Epoch ms when it expires: updatedAt + ttlMs, computed by the store on
   * every head write (`headToStore`; a value the caller passes is ignored);
   * unset without ttlMs.
   */
  expiresAt?: number;
  /**
   * Running totals of the model tokens used by every turn committed to the
   * session (every branch, detached work included); unset until a model call
   * reported usage. Stored as given, like the rest of the head.
   */
  usage?: Usage;
  /**
   * The request IDs of the most recent turns committed with one, oldest first,
   * bounded by the runtime's request-ID window; unset when none. Stored as
   * given, like the rest of the head.
   */
  requests?: CommittedRequest[];
  /**
   * The token of the commit that wrote this head (`HeadCommit.token`); unset
   * when that commit passed none. How a caller whose commit's outcome is
   * unknown recognises its own write; a store sets it on every head write
   * (a token copied from an earlier head is replaced or dropped).
   */
  commitToken?: string;
}

/** What {@link SessionStore.listHeads} returns. */
export interface SessionQuery {
  /** Only this owner's sessions (required; "" is the anonymous owner). */
  owner: string;
  /** Only this agent's sessions (unset or "": every agent). */
  agent?: string;
  /** Only sessions carrying every one of these labels with exactly these values (keys are checked like labels: INVALID_ARGUMENT). */
  labels?: Readonly<Record<string, string>>;
  /** Only sessions updated strictly after this epoch ms. */
  updatedAfter?: number;
  /** At most this many (store default 50, max 1000: larger sizes are clamped; < 1 → INVALID_ARGUMENT AgentError). */
  pageSize?: number;
  /** Opaque token from a previous page. A malformed token → INVALID_ARGUMENT. */
  pageToken?: string;
  /** "Now" for expiry (default Date.now()): heads with expiresAt <= now are left out. */
  now?: number;
}

/** One page of {@link SessionStore.listHeads}. */
export interface HeadPage {
  heads: SessionHead[];
  /** Absent on the last page. */
  nextPageToken?: string;
}

/**
 * What a turn changed relative to its parent snapshot's state. Applying it to
 * the parent state yields the snapshot's state (see `applyStateDelta`).
 */
export interface StateDelta<S = unknown> {
  /** How many of the parent's messages are kept (normally all of them). */
  keepMessages: number;
  /** Messages appended after the kept ones. */
  appendMessages: Message[];
  /** RFC 6902 patch from the parent's custom state (root path `""` for a whole replace). */
  customPatch?: Operation[];
  /** The custom state was removed. */
  customRemoved?: boolean;
  /** When true `artifacts` is the whole new artifact list, exactly as it is (order and duplicates kept). */
  artifactsReset?: boolean;
  /** Without a reset: artifacts added in order (a named one replaces the same-named artifact, unnamed ones append). */
  artifacts?: Artifact[];
  /** Phantom marker tying the delta to its state type. */
  readonly __state?: S;
}

/**
 * A stored snapshot: its metadata and either the full state (a checkpoint) or
 * the delta from its parent. A pending row has neither until it is finalized.
 */
export interface SnapshotRecord<S = unknown> extends Omit<SessionSnapshot<S>, "state"> {
  /** The whole state: this record is a checkpoint. */
  checkpoint?: SessionState<S>;
  /** The change from the parent's state. */
  delta?: StateDelta<S>;
  /** Deltas between this record and its nearest checkpoint, this one included (0 for a checkpoint). */
  depth: number;
  /** Serialized bytes of those deltas (0 for a checkpoint). */
  deltaBytes: number;
  /** Serialized bytes of the nearest checkpoint's state. */
  checkpointBytes: number;
  /** Turn index of the nearest checkpoint (lets a store fetch a chain with one range query). */
  checkpointTurn: number;
  /**
   * Set on the pending row of detached work: the inputs it still has to run
   * and who ran which part (so another instance can take it over). Opaque to
   * stores: stored and returned as its JSON.
   */
  work?: DetachedWork;
  /** The request ID (idempotency key) of the input whose turn this record commits, if it carried one. */
  requestId?: string;
  /** SHA-256 (hex) of that input's canonical JSON without its request ID: tells a retry from a reused ID. */
  requestFingerprint?: string;
  /**
   * Set (with `--webhook-url`) by the write that ended the row's detached
   * work, in that same write: the webhook event it owes. Stored and returned
   * as its JSON, like `work`; never sent to clients.
   */
  webhook?: RecordWebhookMark;
}

/** The webhook event a record owes (see {@link SnapshotRecord.webhook}). */
export interface RecordWebhookMark {
  /** The event's `webhook-id`. */
  id: string;
  /** The event type, e.g. `invocation.completed`. */
  type: string;
  /** When the work ended (epoch ms). */
  at: number;
}

/** A page request for {@link SessionStore.listRecords}. */
export interface SnapshotPageRequest {
  /**
   * At most this many records (store default 50 when unset or 0, max 1000:
   * larger sizes are clamped; negative → INVALID_ARGUMENT AgentError).
   */
  pageSize?: number;
  /** Opaque token from a previous page's `nextPageToken`. */
  pageToken?: string;
  /**
   * False: the caller does not need the records' state, so a store may leave
   * `checkpoint` and `delta` out (and skip reading them). Default true.
   */
  includeState?: boolean;
}

/** One page of a session's records, newest first (greatest createdAt, then greatest ID). */
export interface RecordPage<S = unknown> {
  records: SnapshotRecord<S>[];
  /** Absent on the last page. */
  nextPageToken?: string;
}

/**
 * A compare-and-set of a session head, optionally inserting a new record in
 * the same step (a turn commit).
 */
export interface HeadCommit<S = unknown> {
  /** The head's version the caller read; 0 creates the session (fails when it exists). */
  expectedVersion: number;
  /** The head to store; the store writes it with `version = expectedVersion + 1`. */
  head: Omit<SessionHead, "version">;
  /** A new record (its ID must be unused), written before the head moves. */
  record?: SnapshotRecord<S>;
  /**
   * A value unique to this commit (the turn's request ID, else its snapshot
   * ID; at most {@link MAX_COMMIT_TOKEN_LENGTH} characters, else
   * INVALID_ARGUMENT), stored as the head's `commitToken`. A store that gets
   * an error of unknown outcome (a lost reply, a write-concern timeout, a
   * failover) re-reads the head and answers from whether it holds the token.
   */
  token?: string;
}

/** The longest {@link HeadCommit.token} a store accepts. */
export const MAX_COMMIT_TOKEN_LENGTH = 256;

/**
 * Computes an existing record's new version. Must be pure (a store may call it
 * more than once) and must not mutate its argument (it may be frozen).
 * Returning null skips the write. The store keeps the existing record's
 * `snapshotId`, `sessionId`, `parentId` and `createdAt` whatever the mutator
 * returns.
 */
export type RecordMutator<S = unknown> = (existing: SnapshotRecord<S>) => SnapshotRecord<S> | null;

/**
 * The session ledger every store implements: one head per session, one record
 * per snapshot. Guarantees, in every store and across the processes sharing
 * it: `commit` is atomic with respect to the head (two commits with the same
 * `expectedVersion` never both succeed); `updateRecord` is an atomic
 * read-modify-write of one record (no lost update); records and heads come out
 * as values the caller must treat as read-only (stores may share frozen
 * objects); reads never return a record of a failed commit.
 *
 * No ambiguous outcome: `commit` resolves to the stored head exactly when the
 * head moved to it, and rejects or resolves undefined exactly when it did
 * not. A store whose write fails with an error of unknown outcome (MongoDB: a
 * lost reply, a write-concern timeout, a failover) finds out which before it
 * answers, re-reading the head with read-your-writes semantics; only when it
 * cannot find out within its failover window does it reject UNAVAILABLE, and
 * then the record of that commit stays invisible to every read unless the
 * head later proves the commit landed (records of commits that did not land
 * are swept by `sweepExpired`). `updateRecord` applies a mutation at most
 * once, however its acknowledgements fail.
 */
export interface SessionStore<S = unknown> {
  /**
   * Optional: connects and checks the store now instead of at first use
   * (`agentd serve` calls it before listening). Rejects with the AgentError the
   * first operation would get; UNAVAILABLE means "unreachable for now".
   */
  ready?(): Promise<void>;
  /** The session's head, or undefined. */
  getHead(sessionId: string, ctx?: StoreCallContext): Promise<SessionHead | undefined>;
  /**
   * Optional: the head of the session holding snapshot `snapshotId`, found
   * without reading the record, or undefined when no session holds it. An
   * unknown ID must cost the same lookups as a known one, so the runtime's
   * ownership check (NOT_FOUND for another owner's snapshot) answers in the
   * same time for both. Stores without it: the runtime reads the record, and
   * for an unknown ID a head as well.
   */
  headOfRecord?(snapshotId: string, ctx?: StoreCallContext): Promise<SessionHead | undefined>;
  /**
   * Writes `commit.head` if the stored version equals `commit.expectedVersion`
   * (0: the session must not exist), inserting `commit.record` first. Resolves
   * to the stored head, or `undefined` on a version conflict (nothing written).
   * A record over the store's size limit fails with RESOURCE_EXHAUSTED and
   * nothing is written.
   */
  commit(commit: HeadCommit<S>, ctx?: StoreCallContext): Promise<SessionHead | undefined>;
  /** The record with this ID, or undefined. */
  getRecord(snapshotId: string, ctx?: StoreCallContext): Promise<SnapshotRecord<S> | undefined>;
  /**
   * The records from the nearest checkpoint at or before `snapshotId` up to it,
   * oldest first (so `[0]` is a checkpoint and each next one's parent is the
   * previous one). Undefined when the record does not exist; DATA_LOSS when
   * the chain is broken.
   */
  getChain(snapshotId: string, ctx?: StoreCallContext): Promise<SnapshotRecord<S>[] | undefined>;
  /** The session's records, newest first, paginated. */
  listRecords(sessionId: string, page?: SnapshotPageRequest, ctx?: StoreCallContext): Promise<RecordPage<S>>;
  /**
   * Atomically rewrites an existing record (status, heartbeat, final state of
   * a detached run). Resolves to the stored record, or null when the record is
   * missing or the mutator skipped the write.
   */
  updateRecord(
    snapshotId: string,
    mutator: RecordMutator<S>,
    ctx?: StoreCallContext,
  ): Promise<SnapshotRecord<S> | null>;
  /**
   * The owner's sessions, newest updatedAt first (ties: greater sessionId
   * first), keyset-paginated on (updatedAt, sessionId), so that paging returns
   * every session that existed when paging began exactly once even while
   * others are created concurrently (a session whose head is written while
   * paging moves to the front: later pages do not return it). Optional so
   * that a store without lifecycle support still compiles.
   */
  listHeads?(query: SessionQuery, ctx?: StoreCallContext): Promise<HeadPage>;
  /**
   * Removes the head, every record of the session and everything else stored
   * for it (index files, locks, any per-session files), atomically enough that
   * no reader sees a head without records; idempotent. Resolves true when
   * something was removed, false when nothing was there. Does NOT check
   * owner/agent (the runtime does) and does not abort work (the runtime does
   * first). A commit racing the delete either fails (version conflict) or,
   * with expectedVersion 0, creates a fresh session; it never leaves records
   * without a head. Open status subscriptions of its snapshots are not ended
   * (they see no further change; a subscriber notices by reading the record).
   */
  deleteSession?(sessionId: string, ctx?: StoreCallContext): Promise<boolean>;
  /**
   * The heads that carry a lease (valid or lapsed), of every owner, the
   * earliest `lease.expiresAt` first, at most `limit` (an integer ≥ 1;
   * otherwise INVALID_ARGUMENT). What
   * instances poll to find detached work whose worker died (see
   * `DetachedWork`). Cost: SQL and MongoDB, one indexed query; memory, a scan
   * of the heads. Optional.
   */
  listLeasedHeads?(limit: number, ctx?: StoreCallContext): Promise<SessionHead[]>;
  /**
   * Every session head of the store, of every owner and agent (expired heads
   * not yet swept and leased heads included, heads being deleted left out),
   * `sessionId` ascending (in the store's string order: code units in
   * memory, UTF-8 bytes in SQLite, PostgreSQL (`COLLATE "C"`) and MongoDB), strictly after
   * `afterSessionId` when it is given, at most `limit` (an integer >= 1;
   * otherwise INVALID_ARGUMENT); fewer than `limit` means the scan is done.
   * What `agentd copy-store` enumerates a source store with (sessions
   * created while it scans may or may not be returned). Optional: a store without
   * it can be a copy destination but not a copy source.
   */
  scanHeads?(afterSessionId: string | undefined, limit: number, ctx?: StoreCallContext): Promise<SessionHead[]>;
  /**
   * Deletes (as deleteSession) every session whose expiresAt <= now; resolves
   * to how many. With `beforeExpire`, each expired session's head is passed
   * to it before that session is deleted (webhooks queue `session.expired`
   * there); when it rejects, the sweep rejects and the session stays for the
   * next sweep. A session written between the hook and the deletion stays
   * (the hook may then have seen a head that did not expire) and is not
   * counted. A `now` that is not a finite number is INVALID_ARGUMENT.
   */
  sweepExpired?(now: number, ctx?: StoreCallContext, beforeExpire?: ExpireHook): Promise<number>;
  /**
   * Optional health probe: resolves when the store can serve requests now,
   * rejects (preferably with an AgentError UNAVAILABLE) when it cannot (the
   * database is unreachable, the directory is not writable). The server's
   * health service polls it.
   */
  ping?(): Promise<void>;
  /** Releases connections, watchers and timers. Idempotent. */
  close?(): Promise<void>;
}

/**
 * Optional capability: push notification of status changes. Required for
 * detach and abort.
 */
export interface SnapshotSubscriber {
  /**
   * Yields the record's stored status at once (if it exists), then every
   * change, in order and without duplicates, until `signal` aborts (the
   * iterable then ends and releases its resources).
   */
  subscribeStatus(snapshotId: string, signal: AbortSignal, ctx?: StoreCallContext): AsyncIterable<SnapshotStatus>;
}

/** True when the store can push status changes (and so supports detach/abort). */
export function isSnapshotSubscriber<S>(
  store: SessionStore<S> | undefined,
): store is SessionStore<S> & SnapshotSubscriber {
  return typeof (store as Partial<SnapshotSubscriber> | undefined)?.subscribeStatus === "function";
}

/** Called by `sweepExpired` with the head of an expired session before that session is deleted. */
export type ExpireHook = (head: SessionHead) => Promise<void>;

/** A store with the session lifecycle methods (list, delete, expire). */
export type SessionLifecycleStore<S = unknown> = SessionStore<S> &
  Required<Pick<SessionStore<S>, "listHeads" | "deleteSession" | "sweepExpired">>;

/** True when the store implements listHeads, deleteSession and sweepExpired. */
export function hasSessionLifecycle<S>(store: SessionStore<S> | undefined): store is SessionLifecycleStore<S> {
  return (
    typeof store?.listHeads === "function" &&
    typeof store.deleteSession === "function" &&
    typeof store.sweepExpired === "function"
  );
}
