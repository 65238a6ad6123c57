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

/** Resumes resume-point selection for an invocation (the seeds' AgentInit). */
export interface AgentInit<S = unknown> {
  /** Resume the latest snapshot of this session (server-managed agents). */
  sessionId?: string;
  /** Resume this snapshot (server-managed agents). */
  snapshotId?: string;
  /** Start from this state (client-managed agents). */
  state?: SessionState<S>;
}

/** An empty session state. */
export function emptySessionState<S>(sessionId?: string): SessionState<S> {
  return { ...(sessionId ? { sessionId } : {}), messages: [], artifacts: [] };
}
