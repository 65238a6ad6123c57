import { closeSync, openSync, writeFileSync } from "node:fs";
import { fsyncDescriptor } from "./descriptor-io.js";
import type { SnapshotSortKey } from "../snapshot-order.js";
import { compareNewestFirst } from "../snapshot-order.js";
import { isValidSnapshotId } from "../snapshot-identity.js";
import { readTextIfExists } from "./read-text.js";

/**
 * Appends `createdAt<TAB>snapshotId` to a session's index file (created with
 * mode 0600), optionally fsynced. The index is append-only, one line per
 * committed record, so listing a session reads one small file instead of
 * scanning every record. The line is a single O_APPEND write, so concurrent
 * appenders never interleave. The commit appends it under the session lock,
 * after the record file exists and before the head moves.
 */
export async function appendIndexEntry(path: string, entry: SnapshotSortKey, fsync: boolean): Promise<void> {
  const fd = openSync(path, "a", 0o600);
  try {
    writeFileSync(fd, `${entry.createdAt}\t${entry.snapshotId}\n`); // all of it, one write for a line this short
    if (fsync) await fsyncDescriptor(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * A session's index entries, newest first (`compareNewestFirst`); one entry
 * per ID (the last line wins), torn or garbled lines ignored, [] when the
 * session has no index. Entries may name records that were never committed
 * (a commit that failed after its append removes its record file); readers
 * skip those whose file is missing.
 */
export async function readIndexEntries(path: string): Promise<SnapshotSortKey[]> {
  const text = await readTextIfExists(path);
  if (text === undefined) return [];
  const byId = new Map<string, number>();
  for (const line of text.split("\n")) {
    const tab = line.indexOf("\t");
    if (tab <= 0) continue;
    const createdAt = Number(line.slice(0, tab));
    const snapshotId = line.slice(tab + 1);
    if (!Number.isFinite(createdAt) || !isValidSnapshotId(snapshotId)) continue;
    byId.set(snapshotId, createdAt);
  }
  return [...byId].map(([snapshotId, createdAt]) => ({ snapshotId, createdAt })).sort(compareNewestFirst);
}
