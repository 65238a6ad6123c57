import type { SnapshotStatus } from "./snapshot.js";
import type { Usage } from "./usage.js";

/** A session as callers see it: its head, with the head snapshot's status. */
export interface SessionInfo {
  sessionId: string;
  agent: string;
  labels: Record<string, string>;
  turnCount: number;
  headSnapshotId: string;
  /** The head snapshot's status (a pending one whose worker went silent reads `expired`). */
  headStatus: SnapshotStatus;
  createdAt: number;
  updatedAt: number;
  /** When it expires unless updated; absent: never. */
  expiresAt?: number;
  ttlMs?: number;
  /** Running totals of the model tokens of every turn committed to the session; absent until one reported usage. */
  usage?: Usage;
}
