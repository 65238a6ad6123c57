import type { AgentErrorData } from "../errors/agent-error.js";
import type { JsonPatchOperation } from "./json-patch.js";
import type { ToolResume } from "./tool-resume.js";
import type { Message } from "./content.js";
import type { SessionState } from "./session-state.js";
import type { Usage } from "./usage.js";

/** Lifecycle state of a snapshot. `expired` is computed on read, never stored. */
export type SnapshotStatus = "pending" | "completed" | "failed" | "aborted" | "expired";

/** Statuses after which a snapshot never changes again. */
export const TERMINAL_STATUSES: ReadonlySet<SnapshotStatus> = new Set(["completed", "failed", "aborted", "expired"]);

/** True for a status after which the row never changes again. */
export function isTerminalStatus(status: SnapshotStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}

/** Why a turn or invocation finished. */
export type FinishReason =
  "stop" | "length" | "blocked" | "interrupted" | "other" | "unknown" | "aborted" | "detached" | "failed";

/**
 * A persisted point-in-time capture of session state. Timestamps are epoch
 * milliseconds. The store owns `snapshotId` (and keeps `sessionId` across
 * rewrites); the writer's mutator owns every other field.
 */
export interface SessionSnapshot<S = unknown> {
  snapshotId: string;
  sessionId: string;
  /** The previous snapshot of the conversation (informational lineage). */
  parentId?: string;
  /** Zero-based index of the turn this snapshot captures. */
  turnIndex: number;
  createdAt: number;
  /** Advanced on state-changing rewrites; equals createdAt until then. */
  updatedAt: number;
  /** Refreshed while a detached invocation runs. */
  heartbeatAt?: number;
  status: SnapshotStatus;
  finishReason?: FinishReason;
  /** Set when status is `failed`. */
  error?: AgentErrorData;
  /** Unset on pending rows. */
  state?: SessionState<S>;
  /** Model tokens the turn that wrote it used (a background row: every turn of the detached work); absent when none reported. */
  usage?: Usage;
  /** Set when the turn ran from an edited past (`AgentInit.statePatch` / `messagesPatch` on the parent's state). */
  edit?: SnapshotEdit;
  /**
   * On a pending row of detached work: the inputs it runs, in order (the one
   * running at detach first), each marked `completed` once its turn ended.
   * Absent on committed rows, and when the agent has a state transform.
   */
  pendingInputs?: PendingInput[];
}

/**
 * One input of a pending snapshot's detached work (see
 * {@link SessionSnapshot.pendingInputs}): its message or tool resume, as sent.
 */
export interface PendingInput {
  message?: Message;
  resume?: ToolResume;
  /** The input's idempotency key, when it carried one. */
  requestId?: string;
  /** Its turn ended (its messages join the state when the snapshot commits). */
  completed: boolean;
}

/**
 * The note a snapshot carries when its turn ran from an edited copy of its
 * parent's state: who edited and the operations, as the caller sent them. The
 * parent itself is never changed.
 */
export interface SnapshotEdit {
  /** The principal's subject ("anonymous" without authentication). */
  by: string;
  /** The tenant the caller acted for ("" for the anonymous owner). */
  tenant: string;
  /** The operations applied to the parent's custom state. */
  statePatch?: JsonPatchOperation[];
  /** The operations applied to the parent's history (its wire JSON form). */
  messagesPatch?: JsonPatchOperation[];
}
