import { AgentError } from "../../src/errors/agent-error.js";
import type { CommittedRequest, SessionHead, SnapshotRecord } from "../snapshot-store.js";
import type { SqlDialect, SqlRow, SqlValue } from "./sql-engine.js";

/** The largest record (its JSON: metadata and state) the SQL store holds. */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;

/** The columns of a head row, in the order of {@link HEAD_COLUMNS}. */
export const HEAD_COLUMNS = "session_id, owner, agent, version, updated_at, expires_at, lease_expires_at, head";

/**
 * The values of a head row: the indexed fields as columns and the head as
 * JSON without its committed request IDs (those live in the `requests`
 * table, so a turn does not rewrite them).
 */
export function headValues(head: SessionHead): SqlValue[] {
  const { requests: _requests, ...rest } = head;
  return [
    head.sessionId,
    head.owner,
    head.agent,
    head.version,
    head.updatedAt,
    head.expiresAt ?? null,
    head.lease?.expiresAt ?? null,
    JSON.stringify(rest),
  ];
}

/** SQL for the session's committed request IDs as one JSON array of `[requestId, snapshotId, committedAt]`, oldest first. */
export function requestsColumn(dialect: SqlDialect, sessionColumn: string): string {
  return dialect === "postgres"
    ? `(SELECT json_agg(json_build_array(q.request_id, q.snapshot_id, q.committed_at) ORDER BY q.position)::text
         FROM requests q WHERE q.session_id = ${sessionColumn}) AS requests`
    : `(SELECT json_group_array(json_array(q.request_id, q.snapshot_id, q.committed_at))
         FROM (SELECT * FROM requests q WHERE q.session_id = ${sessionColumn} ORDER BY q.position) q) AS requests`;
}

/**
 * A JSON column's value; DATA_LOSS naming the row (`what`) and the column
 * when it is not JSON (a damaged or hand-edited row), never a bare SyntaxError.
 */
function parseColumn<T>(value: unknown, what: string, column: string): T {
  try {
    return JSON.parse(String(value)) as T;
  } catch (err) {
    throw new AgentError(
      "DATA_LOSS",
      `${what}: its ${column} column is not JSON; restore the row from a backup or delete the session`,
      { cause: err },
    );
  }
}

/** A head from its row (`head` JSON and the `requests` column of {@link requestsColumn}). */
export function headFromRow(row: SqlRow): SessionHead {
  const head = parseColumn<SessionHead>(row.head, `the head of session ${String(row.session_id)}`, "head");
  const requests = parseRequests(row.requests);
  if (requests.length > 0) head.requests = requests;
  return head;
}

function parseRequests(value: unknown): CommittedRequest[] {
  if (value === null || value === undefined) return [];
  const list = (typeof value === "string" ? JSON.parse(value) : value) as [string, string, number | string][];
  return list.map(([requestId, snapshotId, committedAt]) => ({
    requestId,
    snapshotId,
    committedAt: Number(committedAt),
  }));
}

/** The columns of a record row, in the order of {@link recordValues}. */
export const RECORD_COLUMNS =
  "snapshot_id, session_id, created_at, turn_index, status, version, meta, checkpoint, delta";

/**
 * The values of a record row at `version`: metadata JSON apart from the
 * state (a listing without state reads no state). RESOURCE_EXHAUSTED when
 * the record is over {@link MAX_RECORD_BYTES}.
 */
export function recordValues<S>(record: SnapshotRecord<S>, version: number): SqlValue[] {
  const { checkpoint, delta, ...meta } = record;
  const metaJson = JSON.stringify(meta);
  const checkpointJson = checkpoint === undefined ? null : JSON.stringify(checkpoint);
  const deltaJson = delta === undefined ? null : JSON.stringify(delta);
  const bytes = metaJson.length + (checkpointJson?.length ?? 0) + (deltaJson?.length ?? 0);
  if (bytes > MAX_RECORD_BYTES) {
    throw new AgentError(
      "RESOURCE_EXHAUSTED",
      `snapshot ${record.snapshotId} is ${bytes} bytes as JSON, over the SQL store's limit of ${MAX_RECORD_BYTES}: nothing was written`,
    );
  }
  return [
    record.snapshotId,
    record.sessionId,
    record.createdAt,
    record.turnIndex,
    record.status,
    version,
    metaJson,
    checkpointJson,
    deltaJson,
  ];
}

/** A record from its row (`meta`, and `checkpoint`/`delta` when selected). */
export function recordFromRow<S>(row: SqlRow): SnapshotRecord<S> {
  const what = `snapshot ${String(row.snapshot_id)}`;
  const record = parseColumn<SnapshotRecord<S>>(row.meta, what, "meta");
  if (typeof row.checkpoint === "string")
    record.checkpoint = parseColumn<SnapshotRecord<S>["checkpoint"]>(row.checkpoint, what, "checkpoint");
  if (typeof row.delta === "string") record.delta = parseColumn<SnapshotRecord<S>["delta"]>(row.delta, what, "delta");
  return record;
}
