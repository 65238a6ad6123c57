import { AgentError } from "../../src/errors/agent-error.js";
import { deepFreeze } from "../ledger/frozen-value.js";
import { compareNewestFirst, encodePageToken, pageSizeOf, pageStartIndex } from "../snapshot-order.js";
import type { RecordPage, SnapshotPageRequest, SnapshotRecord } from "../snapshot-store.js";
import type { SessionLogs } from "./session-logs.js";

/**
 * The newest version of record `snapshotId` in the session log at `path`
 * (deep-frozen), or undefined when the log does not hold it. DATA_LOSS when
 * its line is garbled, or is intact but does not hold that record.
 */
export function readLoggedRecord<S>(
  logs: SessionLogs,
  path: string,
  snapshotId: string,
): SnapshotRecord<S> | undefined {
  const view = logs.view(path);
  const logged = view?.records.get(snapshotId);
  if (!view || !logged) return undefined;
  const payload = logs.withDescriptor(path, (fd) => view.readPayload(fd, logged));
  if (!payload) return undefined;
  let record: SnapshotRecord<S>;
  try {
    record = JSON.parse(payload.toString("utf8")) as SnapshotRecord<S>;
  } catch (err) {
    throw new AgentError(
      "DATA_LOSS",
      `session log ${path} holds a record ${snapshotId} that is not JSON; restore it from a backup`,
      { cause: err },
    );
  }
  if (record?.snapshotId !== snapshotId) {
    throw new AgentError(
      "DATA_LOSS",
      `session log ${path} holds a record line for ${snapshotId} with another record; restore it from a backup`,
    );
  }
  return deepFreeze(record);
}

/**
 * A page of the records of `sessionId` in the session log at `path`, newest
 * first (`compareNewestFirst`, from the line headers); only the page's
 * records are read. Records of another session (a key collision) are skipped.
 */
export function pageOfLoggedRecords<S>(
  logs: SessionLogs,
  path: string,
  sessionId: string,
  page: SnapshotPageRequest | undefined,
): RecordPage<S> {
  const view = logs.view(path);
  const entries = view
    ? [...view.records].map(([snapshotId, r]) => ({ snapshotId, createdAt: r.createdAt })).sort(compareNewestFirst)
    : [];
  const size = pageSizeOf(page);
  const records: SnapshotRecord<S>[] = [];
  let next = pageStartIndex(entries, page?.pageToken);
  while (records.length < size && next < entries.length) {
    const record = readLoggedRecord<S>(logs, path, entries[next]!.snapshotId);
    next++;
    if (record && record.sessionId === sessionId) records.push(record);
  }
  return next < entries.length ? { records, nextPageToken: encodePageToken(entries[next - 1]!) } : { records };
}
