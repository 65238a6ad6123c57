import { BSON } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionSnapshot, SnapshotStatus } from "../../src/types/snapshot.js";

/** MongoDB's maximum BSON document size (16 MiB). */
export const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

/**
 * How a snapshot is stored: the queryable fields at top level, the full row as
 * a JSON string in `data` (so any state round-trips exactly as through the file
 * store, whatever its keys), and `version` for optimistic concurrency.
 */
export interface SnapshotDocument {
  _id: string;
  version: number;
  sessionId: string;
  createdAt: number;
  updatedAt: number;
  status: SnapshotStatus;
  /** True when this write changed the status (or created the row); lets the change stream skip other rewrites server-side. */
  statusChanged: boolean;
  turnIndex: number;
  parentId: string | null;
  data: string;
}

/**
 * The next version of a row: greater than the previous one and, being derived
 * from the clock (microsecond-scaled epoch), also greater than any version the
 * row had before it was deleted and recreated (chain pruning, restore, or an
 * in-memory test server restart), so a subscriber's version gate never drops a
 * genuinely new write.
 */
export function nextVersion(previous: number | undefined): number {
  return Math.max((previous ?? 0) + 1, Date.now() * 1000);
}

/** Builds the document for `row`; RESOURCE_EXHAUSTED when it would exceed 16 MiB. */
export function toSnapshotDocument<S>(row: SessionSnapshot<S>, version: number, previousStatus: SnapshotStatus | undefined): SnapshotDocument {
  const doc: SnapshotDocument = {
    _id: row.snapshotId,
    version,
    sessionId: row.sessionId,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    status: row.status,
    statusChanged: previousStatus !== row.status,
    turnIndex: row.turnIndex,
    parentId: row.parentId ?? null,
    data: JSON.stringify(row),
  };
  const bytes = BSON.calculateObjectSize(doc as unknown as BSON.Document);
  if (bytes > MAX_DOCUMENT_BYTES) throw tooLarge(row.snapshotId, bytes);
  return doc;
}

/** The RESOURCE_EXHAUSTED error for a snapshot over MongoDB's document limit. */
export function tooLarge(snapshotId: string, bytes?: number): AgentError {
  const size = bytes !== undefined ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : "more than 16 MiB";
  return new AgentError(
    "RESOURCE_EXHAUSTED",
    `snapshot ${snapshotId} is ${size}, over MongoDB's 16 MiB document limit; the previous version of the row is unchanged. ` +
      `Trim the session state (e.g. summarise old messages or store large artifacts elsewhere) or use the file store.`,
    { details: { snapshotId, ...(bytes !== undefined ? { bytes } : {}), limitBytes: MAX_DOCUMENT_BYTES } },
  );
}

/** The snapshot stored in a document. */
export function fromSnapshotDocument<S>(doc: Pick<SnapshotDocument, "data">): SessionSnapshot<S> {
  return JSON.parse(doc.data) as SessionSnapshot<S>;
}

/** Maps a driver error to an AgentError with an actionable message (never a bare driver stack). */
export function mongoError(err: unknown, action: string, snapshotId?: string): AgentError {
  if (err instanceof AgentError) return err;
  const e = err as { name?: string; code?: number; message?: string };
  const message = e?.message ?? String(err);
  if (e?.code === 10334 || e?.code === 17419 || e?.code === 10329 || /too large|larger than|exceeds.*max/i.test(message)) {
    return tooLarge(snapshotId ?? "(unknown)");
  }
  const network = /MongoNetwork|MongoServerSelection|MongoTopologyClosed|PoolClear/.test(e?.name ?? "");
  return new AgentError(
    network ? "UNAVAILABLE" : "INTERNAL",
    `MongoDB ${action} failed: ${message}${network ? " (check that the server in the store URI is reachable)" : ""}`,
    { cause: err },
  );
}
