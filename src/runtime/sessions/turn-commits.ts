import type { SessionState } from "../../types/session-state.js";
import type { FinishReason, SnapshotEdit } from "../../types/snapshot.js";
import type { Usage } from "../../types/usage.js";
import type { SessionClaim } from "./session-claim.js";
import type { TurnRequest } from "./turn-request.js";
import { buildRecord, chainPosition, stateFieldsFor, type CommittedPoint, type RecordSettings } from "./turn-record.js";

/**
 * The turn-end snapshots of one invocation: each successful turn becomes one
 * record holding what the turn changed since the previous commit (or a
 * checkpoint when due), committed through the invocation's session claim.
 * Keeps the last committed point (its frozen state is the next delta's base),
 * so a turn costs the size of what it changed.
 */
export class TurnCommits<S> {
  private point: CommittedPoint<S> | undefined;
  private edit: SnapshotEdit | undefined;

  /** `edit`: the invocation started from an edited copy of `start`'s state; its first commit notes it. */
  constructor(
    private readonly claim: SessionClaim<S>,
    private readonly sessionId: string,
    private readonly settings: RecordSettings,
    start: CommittedPoint<S> | undefined,
    edit?: SnapshotEdit,
  ) {
    this.point = start;
    this.edit = edit;
  }

  /** The edit the next commit notes (until the first commit after an edited start lands). */
  get pendingEdit(): SnapshotEdit | undefined {
    return this.edit;
  }

  /** The last committed snapshot (the resume point until the first commit). */
  get last(): CommittedPoint<S> | undefined {
    return this.point;
  }

  /**
   * Commits `state` as turn `turnIndex` under `snapshotId`. `keptMessages` is
   * how many leading messages are unchanged since the last commit; `usage`
   * (the turn's tokens) goes on the record and into the head's totals;
   * `request` (the input's request ID and fingerprint) goes on the record and
   * into the head's committed request IDs, in the same compare-and-set. Throws
   * RESOURCE_EXHAUSTED over the session size cap and ABORTED when the session
   * was taken or moved; nothing is written then.
   */
  async commit(
    snapshotId: string,
    turnIndex: number,
    finishReason: FinishReason,
    state: SessionState<S>,
    keptMessages: number,
    usage?: Usage,
    request?: TurnRequest,
  ): Promise<void> {
    const parent = this.point;
    const createdAt = Math.max(Date.now(), (parent?.createdAt ?? 0) + 1);
    const fields = stateFieldsFor(parent, state, turnIndex, this.settings, keptMessages);
    const meta = {
      snapshotId,
      sessionId: this.sessionId,
      turnIndex,
      createdAt,
      status: "completed" as const,
      finishReason,
      ...(usage ? { usage } : {}),
      ...(request ? { requestId: request.requestId, requestFingerprint: request.fingerprint } : {}),
      ...(this.edit ? { edit: this.edit } : {}),
    };
    await this.claim.commit(buildRecord(meta, parent, fields), usage);
    this.point = { snapshotId, createdAt, state, position: chainPosition(fields) };
    this.edit = undefined;
  }
}
