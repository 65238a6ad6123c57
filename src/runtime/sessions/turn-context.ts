import type { Artifact, Message } from "../../types/content.js";
import type { FinishReason } from "../../types/snapshot.js";
import type { TurnToolJournal } from "./turn-tool-journal.js";

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
  /**
   * Records the turn's progress so far. In detached work the pending row is
   * checkpointed (the state now, and the stream up to here), so that an
   * instance taking the work over continues this turn from here instead of
   * from its start; call it after a step that must not run twice (the tool
   * loop calls it after each tool round). Otherwise a no-op. Resolves once
   * written; never rejects (a checkpoint that could not be written only
   * means a takeover repeats more).
   */
  checkpoint?(): Promise<void>;
  /**
   * True when this turn continues from a checkpoint another instance wrote
   * before it died: the history already holds the turn's message and
   * everything the turn did up to its last `checkpoint()`, and the input
   * carries no message.
   */
  continued?: boolean;
  /**
   * Takes the steer inputs sent to this turn since the last call (a client's
   * `steer: true` input while the turn runs): their messages are added to the
   * session history as they are (user messages, at this point of the turn)
   * and returned, oldest first; each is acknowledged to the client as
   * `steered`. Call it between steps, e.g. before each model call (the tool
   * loop of prompt agents does). Steers the turn never takes run as the next
   * turn instead: a steer is never dropped. Empty when none is waiting, and
   * absent where the runtime offers no steering (a turn context built by hand).
   */
  takeSteering?(): Message[];
  /**
   * The journal of this turn's tool calls in the session store, when the
   * turn's input has a request ID and the store keeps one: a client's retry
   * of the turn (same request ID) before it committed finds there the results
   * of the calls the earlier attempt completed, and replays them instead of
   * running the tools again. Absent otherwise (no request ID, detached work —
   * its checkpoints journal instead — or a store without the capability).
   */
  toolJournal?: TurnToolJournal;
}

/** What a custom agent returns: overrides of the output's message, artifacts or finish reason. */
export interface AgentResult {
  message?: Message;
  artifacts?: Artifact[];
  finishReason?: FinishReason;
}
