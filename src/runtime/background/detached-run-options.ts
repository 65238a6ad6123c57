import type { AgentInput, InputAck } from "../../types/agent-io.js";
import type { DetachedWork } from "../../types/detached-work.js";
import type { SnapshotEdit } from "../../types/snapshot.js";
import type { Usage } from "../../types/usage.js";
import type { SessionStore, SnapshotSubscriber, StoreCallContext } from "../../../stores/snapshot-store.js";
import type { RuntimeEvents } from "../invocations/runtime-events.js";
import type { SessionClaim } from "../sessions/session-claim.js";
import type { LivenessSettings } from "../sessions/snapshot-liveness.js";
import type { TurnRequest } from "../sessions/turn-request.js";
import type { CommittedPoint, RecordSettings } from "../sessions/turn-record.js";

/** What a detached run needs from its invocation. */
export interface DetachedRunOptions<S> {
  store: SessionStore<S> & SnapshotSubscriber;
  sessionId: string;
  /** Index of the turn running (or next to run) when detach arrived. */
  turnIndex: number;
  liveness: LivenessSettings;
  storeContext?: StoreCallContext;
  /** A turn-end save still in flight when detach arrived; the pending row is chained after it. */
  afterTurnSave: Promise<unknown>;
  /** The invocation's hold on the session: commits the pending row; released when the run ends. */
  claim: SessionClaim<S>;
  /** The last committed snapshot of the conversation, read once that save settled. */
  parent: () => CommittedPoint<S> | undefined;
  /** The edit the row notes when it is the first record after an edited start (read with `parent`). */
  edit?: () => SnapshotEdit | undefined;
  /** Checkpoint policy and size cap for the final row. */
  records: RecordSettings;
  /** Aborted when the row is flipped to aborted, or at shutdown. */
  work: AbortController;
  /** The agent's name (for events). */
  agent: string;
  events?: RuntimeEvents;
  /** Applies a control input posted on the row by another instance (see `ControlInbox`). */
  controls?: (input: AgentInput) => InputAck;
  /** This run's invocation ID: the run recorded in the row's work, fencing every later row write. */
  invocationId: string;
  /**
   * Detach: the work the pending row records (its `runs` gets this run).
   * Takeover: the row already exists and this run is already its last run.
   */
  start: { kind: "detach"; work: DetachedWorkStart; request?: TurnRequest } | AdoptedRow<S>;
}

/** What detach records in the pending row's work, plus the instance running it. */
export type DetachedWorkStart = Omit<DetachedWork, "runs" | "completed"> & { instance: string };

/** A pending row another run started, now held by this run (takeover). */
export interface AdoptedRow<S> {
  kind: "adopt";
  snapshotId: string;
  /** The row's parent: the base of its state fields. */
  parent: CommittedPoint<S> | undefined;
  /** The tokens of the turns the row already holds. */
  usage?: Usage;
  /** This run's index in the work's runs: its chunk appends carry it (see `ChunkLogKey.run`). */
  run: number;
}
