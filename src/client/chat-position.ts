import type { AgentOutput, AgentStreamChunk } from "../types/agent-io.js";
import type { AgentInit } from "../types/session-state.js";

/**
 * Where a conversation's Chat stands, across reconnects: the session and
 * snapshot it is at, how many turns ended (and whether one failed), and how
 * many chunks of the turn in flight were delivered, so that a reconnected
 * call, which streams that turn again from its start, drops them.
 */
export class ChatPosition {
  /** The session ID: from the source, then from each TurnEnd and the output. */
  sessionId: string | undefined;
  /** The latest snapshot ID: the source's, then each TurnEnd's, then the output's. */
  snapshotId: string | undefined;
  /** The init edits the past (state / messages patch) and no turn of this conversation committed yet. */
  editPending: boolean;
  turnsEnded = 0;
  /**
   * A TurnEnd said `failed`: the invocation ended there (its output, with
   * the error, comes next). A stream cut after it is not reconnected: a new
   * call would report the session as it is, as if nothing had failed.
   */
  failedTurn = false;
  /** Model chunks etc. delivered to the turn in flight; after a reconnect, that many of its re-sent chunks are dropped. */
  private delivered = 0;
  private skip = 0;

  constructor(source: AgentInit<unknown>) {
    this.sessionId = source.sessionId ?? source.state?.sessionId;
    this.snapshotId = source.snapshotId;
    this.editPending = (source.statePatch?.length ?? 0) + (source.messagesPatch?.length ?? 0) > 0;
  }

  /** A new Chat call begins: the chunks of the turn in flight delivered so far come again and are dropped. */
  startAttempt(): void {
    this.skip = this.delivered;
  }

  /**
   * Takes a streamed chunk (not an InputAck) into account; false when it is
   * one delivered before the reconnect, to be dropped. A TurnEnd moves the
   * session and snapshot on.
   */
  accept(chunk: AgentStreamChunk): boolean {
    if (!chunk.turnEnd && this.skip > 0) {
      this.skip--;
      return false;
    }
    if (chunk.turnEnd) {
      if (chunk.turnEnd.sessionId) this.sessionId = chunk.turnEnd.sessionId;
      if (chunk.turnEnd.snapshotId) {
        this.snapshotId = chunk.turnEnd.snapshotId;
        this.editPending = false;
      }
      this.turnsEnded++;
      if (chunk.turnEnd.finishReason === "failed") this.failedTurn = true;
      this.delivered = 0;
      this.skip = 0;
    } else this.delivered++;
    return true;
  }

  /** The output arrived: its session and snapshot are the conversation's last. */
  onOutput(output: AgentOutput<unknown>): void {
    if (output.sessionId) this.sessionId = output.sessionId;
    if (output.snapshotId) this.snapshotId = output.snapshotId;
  }
}
