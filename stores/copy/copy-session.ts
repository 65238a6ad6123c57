import { AgentError } from "../../src/errors/agent-error.js";
import type { HeadCommit, SessionHead, SessionStore, SnapshotRecord, StoreCallContext } from "../snapshot-store.js";
import { canonicalJson } from "./canonical-json.js";
import type { CopySource } from "./copy-source.js";
import { comparableHead, digestOf, readSessionContent, type SessionDigest } from "./session-content.js";

/** How a session's copy went. */
export type SessionCopyOutcome =
  /** The destination did not hold it: every record and the head were written. */
  | "copied"
  /** The destination held part of it (an interrupted copy) or an older version: what was missing or different was written. */
  | "completed"
  /** The destination already held exactly the source's session: nothing was written. */
  | "unchanged";

/** One session copied and verified (see {@link copySession}). */
export interface SessionCopy extends SessionDigest {
  sessionId: string;
  outcome: SessionCopyOutcome;
  /** Records this call inserted or rewrote in the destination. */
  written: number;
}

/**
 * Copies one session (its head as given, every record of every branch as the
 * source's `listRecords` returns them) from `from` to `to` through the store
 * contract, then verifies it: the destination, read back, must give the same
 * record count and checksum as the source (`digestOf`).
 *
 * Resumable and idempotent: records the destination already holds unchanged
 * are skipped, records it holds with other contents are rewritten
 * (`updateRecord`), missing ones are inserted oldest first, one `commit`
 * each, with an interim head pointing at the record just written (so a copy
 * cut short leaves a consistent session that the next run completes, never a
 * head naming a missing record); the last write carries the source's head
 * and commit token. Every write is a compare-and-set on the destination
 * head's version. IDs, parent links, turn indexes, timestamps, status, state,
 * labels, TTL (`expiresAt` is recomputed from the same `updatedAt + ttlMs`),
 * lease, owner and agent are kept; only the head's `version` restarts.
 *
 * Fails (nothing more written) with FAILED_PRECONDITION when the destination
 * holds a session of that ID for another agent or owner, or records the
 * source does not have; ABORTED when another writer moves the destination
 * head meanwhile; DATA_LOSS when the verification finds a difference. Every
 * message names the session.
 */
export async function copySession(
  from: CopySource,
  to: SessionStore,
  sourceHead: SessionHead,
  ctx?: StoreCallContext,
): Promise<SessionCopy> {
  const sessionId = sourceHead.sessionId;
  const source = await readSessionContent(from, sourceHead, ctx);
  const sourceDigest = digestOf(source);
  const existingHead = await to.getHead(sessionId, ctx);
  const existing = existingHead ? await readSessionContent(to, existingHead, ctx) : undefined;
  if (existing && digestOf(existing).checksum === sourceDigest.checksum)
    return { sessionId, outcome: "unchanged", written: 0, ...sourceDigest };
  if (existingHead && (existingHead.agent !== sourceHead.agent || existingHead.owner !== sourceHead.owner)) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `session ${sessionId}: the destination holds a session of this ID for another agent or owner; remove it there or copy into an empty store`,
    );
  }
  const sourceIds = new Set(source.records.map((r) => r.snapshotId));
  const stray = existing?.records.find((r) => !sourceIds.has(r.snapshotId));
  if (stray) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `session ${sessionId}: the destination holds snapshot ${stray.snapshotId}, which the source does not; it is not a copy of this session`,
    );
  }

  const held = new Map((existing?.records ?? []).map((r) => [r.snapshotId, canonicalJson(r)]));
  let written = 0;
  for (const record of source.records) {
    const text = held.get(record.snapshotId);
    if (text === undefined || text === canonicalJson(record)) continue;
    if (!(await to.updateRecord(record.snapshotId, () => record, ctx)))
      throw conflict(sessionId, `snapshot ${record.snapshotId} vanished from the destination while it was rewritten`);
    written++;
  }

  const missing = source.records.filter((r) => !held.has(r.snapshotId));
  let head = existingHead;
  let turnCount = existing?.records.length ?? 0;
  for (const [i, record] of missing.entries()) {
    const last = i === missing.length - 1;
    head = await commitOrFail(
      to,
      sessionId,
      {
        expectedVersion: head?.version ?? 0,
        head: last ? comparableHead(sourceHead) : interimHead(sourceHead, record, ++turnCount),
        record,
        ...(last && sourceHead.commitToken !== undefined ? { token: sourceHead.commitToken } : {}),
      },
      ctx,
    );
    written++;
  }
  if (
    !head ||
    (missing.length === 0 && canonicalJson(comparableHead(head)) !== canonicalJson(comparableHead(sourceHead)))
  ) {
    head = await commitOrFail(
      to,
      sessionId,
      {
        expectedVersion: head?.version ?? 0,
        head: comparableHead(sourceHead),
        ...(sourceHead.commitToken !== undefined ? { token: sourceHead.commitToken } : {}),
      },
      ctx,
    );
  }

  const copied = digestOf(await readSessionContent(to, head, ctx));
  if (copied.records !== sourceDigest.records || copied.checksum !== sourceDigest.checksum) {
    throw new AgentError(
      "DATA_LOSS",
      `session ${sessionId}: the copy does not verify (source ${sourceDigest.records} records, sha256 ${sourceDigest.checksum}; destination ${copied.records} records, sha256 ${copied.checksum})`,
    );
  }
  return { sessionId, outcome: existingHead ? "completed" : "copied", written, ...sourceDigest };
}

/**
 * The head written with a record that is not the copy's last: the source's
 * head moved to that record, with the turns counted so far and without what
 * names other records or live invocations (lease, waiters, request IDs,
 * commit token), so an interrupted copy leaves a consistent session.
 */
function interimHead(source: SessionHead, record: SnapshotRecord, turnCount: number): Omit<SessionHead, "version"> {
  const {
    version: _version,
    lease: _lease,
    waiters: _waiters,
    requests: _requests,
    commitToken: _token,
    ...rest
  } = source;
  return { ...rest, headSnapshotId: record.snapshotId, turnCount };
}

/** Commits, or throws ABORTED naming the session when the destination head moved meanwhile. */
async function commitOrFail(
  to: SessionStore,
  sessionId: string,
  commit: HeadCommit,
  ctx?: StoreCallContext,
): Promise<SessionHead> {
  const head = await to.commit(commit, ctx);
  if (!head) throw conflict(sessionId, "its head in the destination was written by someone else meanwhile");
  return head;
}

function conflict(sessionId: string, what: string): AgentError {
  return new AgentError(
    "ABORTED",
    `session ${sessionId}: ${what}; stop every agentd using the destination and run copy-store again`,
  );
}
