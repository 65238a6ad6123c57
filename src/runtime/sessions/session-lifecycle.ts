import { uuidv7 } from "../../../stores/uuid-v7.js";
import { isChunkLog } from "../../../stores/chunk-log.js";
import { AgentError } from "../../errors/agent-error.js";
import type { SessionInfo } from "../../types/session-info.js";
import type {
  HeadPage,
  SessionHead,
  SessionQuery,
  SessionStore,
  StoreCallContext,
} from "../../../stores/snapshot-store.js";
import { validateLabels } from "../../../stores/session-labels.js";
import { LocalClaims } from "./local-claims.js";
import { DeleteReceipts } from "./delete-receipts.js";
import { validRequestId, type RequestWindow } from "./request-ledger.js";
import { ownerOf, ownsSession, sessionNotFound } from "./session-lookup.js";
import { validateTtl } from "./session-settings.js";
import { abortIfPending } from "./snapshot-access.js";
import { effectiveStatus, type LivenessSettings } from "./snapshot-liveness.js";

/** A ListSessions request (the owner comes from the call context). */
export interface SessionListRequest {
  agent?: string;
  labels?: Record<string, string>;
  updatedAfter?: number;
  pageSize?: number;
  pageToken?: string;
}

/** What UpdateSession changes. */
export interface SessionUpdate {
  setLabels?: Record<string, string>;
  removeLabels?: string[];
  /** A new time-to-live (counted from now); null removes it; undefined leaves it. */
  ttlMs?: number | null;
}

/** Where sessions live and how their statuses read. */
export interface SessionLifecycleOptions {
  /** The store lists without an agent filter go to, and the first one searched by ID. */
  defaultStore?: SessionStore;
  /** Every other store an agent uses (searched by ID; listed with an agent filter). */
  storeOf: (agent: string) => SessionStore | undefined;
  /** All distinct stores in use. */
  stores: () => SessionStore[];
  liveness: LivenessSettings;
  /** How long a DeleteSession request ID is remembered (default: `DEFAULT_REQUEST_WINDOW`). */
  requestWindow?: RequestWindow;
}

const MAX_ATTEMPTS = 100;

function unsupported(what: string): AgentError {
  return new AgentError(
    "UNIMPLEMENTED",
    `this session store cannot ${what}: use the memory, SQLite, PostgreSQL or MongoDB store`,
  );
}

/**
 * Session lifecycle over the stores: list the caller's sessions, read one,
 * change its labels and time-to-live, delete it. Every operation is scoped to
 * the caller's owner (tenant): another owner's session, like an expired one,
 * is NOT_FOUND (and is never listed).
 */
export class SessionLifecycle {
  private readonly deletes: DeleteReceipts;

  constructor(private readonly o: SessionLifecycleOptions) {
    this.deletes = new DeleteReceipts(o.requestWindow);
  }

  /** The caller's sessions, newest-updated first. */
  async list(
    request: SessionListRequest,
    ctx?: StoreCallContext,
  ): Promise<{ sessions: SessionInfo[]; nextPageToken?: string }> {
    const store = request.agent !== undefined ? this.o.storeOf(request.agent) : this.o.defaultStore;
    if (!store) {
      if (request.agent !== undefined) return { sessions: [] };
      throw new AgentError("FAILED_PRECONDITION", "no default session store is configured: list with an agent filter");
    }
    if (!store.listHeads) throw unsupported("list sessions");
    const query: SessionQuery = {
      owner: ownerOf(ctx),
      ...(request.agent !== undefined ? { agent: request.agent } : {}),
      ...(request.labels && Object.keys(request.labels).length > 0 ? { labels: validateLabels(request.labels) } : {}),
      ...(request.updatedAfter !== undefined ? { updatedAfter: request.updatedAfter } : {}),
      ...(request.pageSize ? { pageSize: request.pageSize } : {}),
      ...(request.pageToken ? { pageToken: request.pageToken } : {}),
    };
    const page: HeadPage = await store.listHeads(query, ctx);
    const sessions = await Promise.all(page.heads.map((head) => this.info(store, head, ctx)));
    return { sessions, ...(page.nextPageToken ? { nextPageToken: page.nextPageToken } : {}) };
  }

  /** One of the caller's sessions; NOT_FOUND when it is unknown, another owner's or expired. */
  async get(sessionId: string, ctx?: StoreCallContext): Promise<SessionInfo> {
    const { store, head } = await this.find(sessionId, ctx);
    return this.info(store, head, ctx);
  }

  /** Sets/removes labels and changes the time-to-live (a compare-and-set on the head, retried on conflict). */
  async update(sessionId: string, update: SessionUpdate, ctx?: StoreCallContext): Promise<SessionInfo> {
    const setLabels = update.setLabels ?? {};
    const ttlMs = update.ttlMs === undefined || update.ttlMs === null ? update.ttlMs : validateTtl(update.ttlMs);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const { store, head } = await this.find(sessionId, ctx);
      const labels: Record<string, string> = { ...head.labels, ...setLabels };
      for (const key of update.removeLabels ?? []) delete labels[key];
      const { version, expiresAt: _expiresAt, ...rest } = head;
      const next: Omit<SessionHead, "version"> = { ...rest, updatedAt: Date.now() };
      if (Object.keys(labels).length > 0) next.labels = validateLabels(labels);
      else delete next.labels;
      if (ttlMs === null) delete next.ttlMs;
      else if (ttlMs !== undefined) next.ttlMs = ttlMs;
      const stored = await store.commit({ expectedVersion: version, head: next }, ctx);
      if (stored) return this.info(store, stored, ctx);
    }
    throw new AgentError("ABORTED", `session "${sessionId}" kept changing while it was being updated; retry`);
  }

  /**
   * Stops the session's work — the invocation holding it loses its lease (a
   * local one is told at once; one elsewhere fails its next commit), pending
   * background snapshots are aborted — then removes the session and every
   * snapshot of it. Resolves false when there was nothing of the caller's to
   * delete (idempotent). With `requestId` (validated: INVALID_ARGUMENT), a
   * retry of the call answers as the first did, within the request-ID window
   * and on this instance (see {@link DeleteReceipts}).
   */
  async delete(sessionId: string, ctx?: StoreCallContext, requestId?: string): Promise<boolean> {
    const id = validRequestId(requestId, "request_id");
    if (!id) return this.deleteNow(sessionId, ctx);
    const owner = ownerOf(ctx);
    const answered = this.deletes.answered(owner, id, sessionId);
    if (answered !== undefined) return answered;
    const deleted = await this.deleteNow(sessionId, ctx);
    this.deletes.record(owner, id, sessionId, deleted);
    return deleted;
  }

  private async deleteNow(sessionId: string, ctx?: StoreCallContext): Promise<boolean> {
    let found: { store: SessionStore; head: SessionHead };
    try {
      found = await this.find(sessionId, ctx);
    } catch (err) {
      if (err instanceof AgentError && err.status === "NOT_FOUND") return false;
      throw err;
    }
    const { store } = found;
    if (!store.deleteSession) throw unsupported("delete sessions");
    await this.takeOver(store, found.head, ctx);
    await this.abortPending(store, sessionId, ctx);
    return store.deleteSession(sessionId, ctx);
  }

  /** Deletes every expired session of every store; resolves to how many. */
  async sweepExpired(now: number = Date.now()): Promise<number> {
    let removed = 0;
    for (const store of this.o.stores()) if (store.sweepExpired) removed += await store.sweepExpired(now);
    return removed;
  }

  /** Removes the chunk logs of detached work past their retention, in every store that keeps them; resolves to how many. */
  async sweepChunks(now: number = Date.now()): Promise<number> {
    let removed = 0;
    for (const store of this.o.stores()) if (isChunkLog(store)) removed += await store.sweepChunks(now);
    return removed;
  }

  private async find(sessionId: string, ctx?: StoreCallContext): Promise<{ store: SessionStore; head: SessionHead }> {
    if (!sessionId) throw new AgentError("INVALID_ARGUMENT", "session_id is required");
    const stores = [
      ...new Set([this.o.defaultStore, ...this.o.stores()].filter((s): s is SessionStore => s !== undefined)),
    ];
    for (const store of stores) {
      const head = await store.getHead(sessionId, ctx);
      if (ownsSession(head, undefined, ctx)) return { store, head };
    }
    throw sessionNotFound(sessionId);
  }

  /** Moves the lease to a deletion marker so that the holder's next commit fails. */
  private async takeOver(store: SessionStore, head: SessionHead, ctx?: StoreCallContext): Promise<void> {
    const deleter = `delete-${uuidv7()}`;
    let current: SessionHead | undefined = head;
    for (let attempt = 0; current && attempt < MAX_ATTEMPTS; attempt++) {
      const holder = current.lease && current.lease.expiresAt > Date.now() ? current.lease.invocationId : undefined;
      if (!holder) return;
      const { version, expiresAt: _expiresAt, waiters: _waiters, ...rest } = current;
      const stored = await store.commit(
        {
          expectedVersion: version,
          head: { ...rest, lease: { invocationId: deleter, expiresAt: Date.now() + 60_000 }, updatedAt: Date.now() },
        },
        ctx,
      );
      if (stored) {
        LocalClaims.of(store).interrupt(head.sessionId, holder, deleter);
        return;
      }
      current = await store.getHead(head.sessionId, ctx);
    }
  }

  private async abortPending(store: SessionStore, sessionId: string, ctx?: StoreCallContext): Promise<void> {
    let pageToken: string | undefined;
    do {
      const page = await store.listRecords(
        sessionId,
        { pageSize: 1000, includeState: false, ...(pageToken ? { pageToken } : {}) },
        ctx,
      );
      for (const record of page.records) {
        if (record.status !== "pending") continue;
        await store.updateRecord(record.snapshotId, abortIfPending, ctx);
      }
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  private async info(store: SessionStore, head: SessionHead, ctx?: StoreCallContext): Promise<SessionInfo> {
    const record = await store.getRecord(head.headSnapshotId, ctx);
    return {
      sessionId: head.sessionId,
      agent: head.agent,
      labels: { ...head.labels },
      turnCount: head.turnCount,
      headSnapshotId: head.headSnapshotId,
      headStatus: record ? effectiveStatus(record, this.o.liveness) : "completed",
      createdAt: head.createdAt,
      updatedAt: head.updatedAt,
      ...(head.expiresAt !== undefined ? { expiresAt: head.expiresAt } : {}),
      ...(head.ttlMs !== undefined ? { ttlMs: head.ttlMs } : {}),
      ...(head.usage ? { usage: { ...head.usage } } : {}),
    };
  }
}
