import type { FinishReason, SnapshotStatus } from "../types/snapshot.js";

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
}

/** Emitted when detached work has written its row's final status (or left it pending at shutdown). */
export interface BackgroundFinishedEvent {
  agent: string;
  sessionId: string;
  snapshotId: string;
  /** The status the row was left in. */
  status: SnapshotStatus;
}

/** Optional listeners for what the runtime does (the CLI logs each as one JSON line). */
export interface RuntimeEvents {
  turn?(event: TurnEvent): void;
  abortObserved?(event: AbortObservedEvent): void;
  backgroundFinished?(event: BackgroundFinishedEvent): void;
}
