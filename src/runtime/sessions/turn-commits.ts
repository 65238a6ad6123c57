import type { SessionState } from "../../types/session-state.js";
import { diffMessages, diffStateAfterMessages } from "../../../stores/ledger/state-delta.js";
import type { StateDelta } from "../../../stores/snapshot-store.js";
import type { FinishReason, SnapshotEdit } from "../../types/snapshot.js";
import type { Usage } from "../../types/usage.js";
import type { SessionClaim } from "./session-claim.js";
import type { TurnRequest } from "./turn-request.js";
import type { SessionMark } from "./session-mark.js";
import {
  buildRecord,
  chainPosition,
  recordFieldsFor,
  type ChainPosition,
  type CommittedPoint,
  type RecordSettings,
} from "./turn-record.js";

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
   * Commits `mark`'s state as turn `turnIndex` under `snapshotId`.
   * `keptMessages` is how many leading messages are unchanged since the last
   * commit; `usage` (the turn's tokens) goes on the record and into the
   * head's totals; `request` (the input's request ID and fingerprint) goes on
   * the record and into the head's committed request IDs, in the same
   * compare-and-set. Costs what the turn changed: the history is not copied
   * (but for a checkpoint, when one is due). Throws RESOURCE_EXHAUSTED over
   * the session size cap and ABORTED when the session was taken or moved;
   * nothing is written then.
   */
  async commit(
    snapshotId: string,
    turnIndex: number,
    finishReason: FinishReason,
    mark: SessionMark<S>,
    keptMessages: number,
    usage?: Usage,
    request?: TurnRequest,
  ): Promise<void> {
    const parent = this.point;
    const createdAt = Math.max(Date.now(), (parent?.createdAt ?? 0) + 1);
    const delta = parent ? deltaSince(parent, mark, keptMessages) : undefined;
    const fields = recordFieldsFor(
      parent?.position,
      delta,
      () => mark.state(),
      turnIndex,
      this.settings,
      this.sessionId,
    );
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
    this.point = new MarkedPoint(snapshotId, createdAt, mark, chainPosition(fields));
    this.edit = undefined;
  }
}

/** A point this class committed: its state kept as the {@link SessionMark} it was committed from. */
class MarkedPoint<S> implements CommittedPoint<S> {
  constructor(
    readonly snapshotId: string,
    readonly createdAt: number,
    readonly mark: SessionMark<S>,
    readonly position: ChainPosition,
  ) {}

  /** The committed state (its messages copied out of the history on first read). */
  get state(): SessionState<S> {
    return this.mark.state();
  }
}

/**
 * The change from `parent` to `mark`, comparing messages by identity without
 * copying either history. From a point committed from a mark of the same
 * history the turn only appended, so that mark's length is the kept count;
 * otherwise the `keptMessages` hint is checked and the rest compared.
 */
function deltaSince<S>(parent: CommittedPoint<S>, mark: SessionMark<S>, keptMessages: number): StateDelta<S> {
  const base = parent instanceof MarkedPoint ? (parent.mark as SessionMark<S>) : undefined;
  const before = base ?? parent.state;
  const beforeMessages = base ?? { history: parent.state.messages, length: parent.state.messages.length };
  const kept = base?.isPrefixOf(mark) ? base.length : keptMessages;
  return diffStateAfterMessages(before, mark, diffMessages(beforeMessages, mark, kept));
}
