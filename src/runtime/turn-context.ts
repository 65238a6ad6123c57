import type { Artifact, Message } from "../types/content.js";
import type { FinishReason } from "../types/snapshot.js";

/** Identity of the running turn, known before the turn does any work. */
export interface TurnContext {
  /** The ID the turn-end snapshot will be written under (absent for client-managed agents and after detach). */
  snapshotId?: string;
  /** The snapshot this turn continues from. */
  parentId?: string;
  /** Zero-based index of the turn in the conversation. */
  turnIndex: number;
  /** Aborts when the invocation is cancelled (client gone before detach, abort, shutdown). */
  signal: AbortSignal;
}

/** What a custom agent returns: overrides of the output's message, artifacts or finish reason. */
export interface AgentResult {
  message?: Message;
  artifacts?: Artifact[];
  finishReason?: FinishReason;
}
