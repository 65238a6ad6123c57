import { createHash } from "node:crypto";
import type { SessionHead, SessionStore, SnapshotRecord, StoreCallContext } from "../snapshot-store.js";
import { canonicalJson } from "./canonical-json.js";

/** Records one `listRecords` page asks for while copy-store reads a session (the contract's maximum). */
const RECORD_PAGE_SIZE = 1000;

/** A session as a store holds it: its head and every record of every branch. */
export interface SessionContent {
  head: SessionHead;
  /** Every record, oldest first (createdAt, then turnIndex, then snapshotId): parents before their children. */
  records: SnapshotRecord[];
}

/** What copy-store verifies of a session: how many records it has and a checksum of all of it. */
export interface SessionDigest {
  records: number;
  /**
   * SHA-256 (hex) of the canonical JSON (`canonicalJson`) of the head without
   * its `version` (a store's compare-and-set counter, which a copy restarts),
   * then of every record ordered by snapshotId, one per line: equal exactly
   * when both stores hold the same session, record for record.
   */
  checksum: string;
}

/** The head as copy-store compares it: every field but `version`. */
export function comparableHead(head: SessionHead): Omit<SessionHead, "version"> {
  const { version: _version, ...rest } = head;
  return rest;
}

/** Oldest first: createdAt, then turnIndex, then snapshotId (code-unit order). */
export function compareOldestFirst(a: SnapshotRecord, b: SnapshotRecord): number {
  return (
    a.createdAt - b.createdAt ||
    a.turnIndex - b.turnIndex ||
    (a.snapshotId < b.snapshotId ? -1 : a.snapshotId > b.snapshotId ? 1 : 0)
  );
}

/**
 * Every record of the session (with state) read through `listRecords`, page
 * by page, oldest first; the head as given. Reads nothing else.
 */
export async function readSessionContent(
  store: Pick<SessionStore, "listRecords">,
  head: SessionHead,
  ctx?: StoreCallContext,
): Promise<SessionContent> {
  const records: SnapshotRecord[] = [];
  let pageToken: string | undefined;
  do {
    const page = await store.listRecords(
      head.sessionId,
      { pageSize: RECORD_PAGE_SIZE, includeState: true, ...(pageToken ? { pageToken } : {}) },
      ctx,
    );
    records.push(...page.records);
    pageToken = page.nextPageToken;
  } while (pageToken);
  return { head, records: records.sort(compareOldestFirst) };
}

/** The {@link SessionDigest} of a session's content. */
export function digestOf(content: SessionContent): SessionDigest {
  const hash = createHash("sha256");
  hash.update(canonicalJson(comparableHead(content.head)));
  hash.update("\n");
  const byId = [...content.records].sort((a, b) =>
    a.snapshotId < b.snapshotId ? -1 : a.snapshotId > b.snapshotId ? 1 : 0,
  );
  for (const record of byId) {
    hash.update(canonicalJson(record));
    hash.update("\n");
  }
  return { records: content.records.length, checksum: hash.digest("hex") };
}
