import type { JsonPatchOperation } from "./json-patch.js";
import type { Artifact, Message } from "./content.js";

/**
 * The portable conversation state: history, typed custom state and artifacts,
 * plus the framework-owned session ID. Mirrors `agentd.v1.SessionState`.
 */
export interface SessionState<S = unknown> {
  sessionId?: string;
  /** History, excluding prompt-rendered messages. */
  messages: Message[];
  custom?: S;
  artifacts: Artifact[];
}

/**
 * What a call does when its session is busy (another invocation holds it):
 * `reject` fails at once with ABORTED naming the running invocation;
 * `enqueue` waits (first come, first served) until the session is free,
 * bounded by the call's deadline; `interrupt` stops the running invocation
 * (it ends ABORTED, its unfinished turn unwritten) and runs.
 */
export type BusyPolicy = "reject" | "enqueue" | "interrupt";

/** Resumes resume-point selection for an invocation (the seeds' AgentInit). */
export interface AgentInit<S = unknown> {
  /** What to do when the session is busy; the server's default (`--busy-policy`, REJECT) when unset. */
  busyPolicy?: BusyPolicy;
  /** Resume the latest snapshot of this session (server-managed agents). */
  sessionId?: string;
  /** Resume this snapshot (server-managed agents). */
  snapshotId?: string;
  /** Start from this state (client-managed agents). */
  state?: SessionState<S>;
  /** Labels of a new session (ignored when resuming). */
  labels?: Record<string, string>;
  /** Idle time-to-live (ms) of a new session (ignored when resuming); the server's default when unset. */
  ttlMs?: number;
  /**
   * Fork from an edited past (server-managed agents, with `sessionId` or
   * `snapshotId`): RFC 6902 operations on the resumed snapshot's custom state,
   * applied before the first turn runs. The result must pass the agent's state
   * schema. The first snapshot written is a child of the resumed one and notes
   * the edit (`SessionSnapshot.edit`).
   */
  statePatch?: JsonPatchOperation[];
  /**
   * As `statePatch`, on the resumed history in its wire JSON form: the array
   * of `agentd.v1.Message` in proto JSON (`{"role": "ROLE_USER", "content":
   * [{"text": "hi"}]}`), as GetSnapshot shows it over the wire.
   */
  messagesPatch?: JsonPatchOperation[];
}

/** An empty session state. */
export function emptySessionState<S>(sessionId?: string): SessionState<S> {
  return { ...(sessionId ? { sessionId } : {}), messages: [], artifacts: [] };
}
