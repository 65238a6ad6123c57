import type { FinishReason, SnapshotStatus } from "../../types/snapshot.js";

/** Fields of the per-turn event. */
export interface TurnEvent {
  agent: string;
  sessionId: string;
  snapshotId?: string;
  turnIndex: number;
  finishReason: FinishReason;
  detached: boolean;
  durationMs: number;
}

/** Emitted when detached work learns, by subscription, that its row was aborted. */
export interface AbortObservedEvent {
  agent: string;
  sessionId: string;
  snapshotId: string;
  /** Epoch ms at which the worker observed the abort and cancelled its work. */
  observedAt: number;
  /**
   * How the worker learnt it: `status`, the row's status subscription;
   * `row-write`, a heartbeat or checkpoint write that found the row aborted
   * (the backstop when the subscription missed the change).
   */
  via: "status" | "row-write";
}

/** Emitted when detached work has written its row's final status (or left it pending at shutdown). */
export interface BackgroundFinishedEvent {
  agent: string;
  sessionId: string;
  snapshotId: string;
  /** The status the row was left in. */
  status: SnapshotStatus;
}

/** Emitted when this instance took over the detached work of a dead instance. */
export interface WorkTakenOverEvent {
  agent: string;
  sessionId: string;
  snapshotId: string;
  /** The instance whose run died. */
  from: string;
  /** This instance. */
  instance: string;
  /** How many of the work's inputs had completed (the run resumes at the next one). */
  completedInputs: number;
  /** How many inputs are left to run. */
  remainingInputs: number;
}

/** Optional listeners for what the runtime does (the CLI logs each as one JSON line). */
export interface RuntimeEvents {
  turn?(event: TurnEvent): void;
  abortObserved?(event: AbortObservedEvent): void;
  backgroundFinished?(event: BackgroundFinishedEvent): void;
  workTakenOver?(event: WorkTakenOverEvent): void;
}
