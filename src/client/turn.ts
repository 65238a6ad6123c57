import type { ConnectError } from "@connectrpc/connect";
import type { AgentStreamChunk, InputAck, TurnEnd } from "../types/agent-io.js";
import { ChunkLog } from "./chunk-log.js";

/**
 * One turn of a {@link Conversation}, as returned by `conversation.send()`.
 *
 * - Iterate it (`for await (const chunk of turn)`) for the turn's chunks in
 *   order: model chunks, custom-state patches, artifacts, and last the TurnEnd
 *   chunk. Chunks are buffered from the moment they arrive, so a turn can be
 *   read late, and read more than once (each iteration replays from the start).
 * - Await it (`await turn`, or `turn.end`) for its {@link TurnEnd}: resolves
 *   when the TurnEnd chunk arrives. A turn that failed in-band still resolves,
 *   with `finishReason: "failed"` (the error is in the conversation's output).
 * - It rejects (and its iteration throws) with a `ConnectError` when the call
 *   fails, when the conversation is closed, with `Code.Canceled` when the
 *   conversation was detached before this turn ended, and with `Code.Aborted`
 *   when an earlier turn failed in-band (which ends the invocation).
 */
export class Turn implements AsyncIterable<AgentStreamChunk>, PromiseLike<TurnEnd> {
  /** Resolves with the turn's TurnEnd (see the class description for rejections). */
  readonly end: Promise<TurnEnd>;
  private readonly log = new ChunkLog();
  private resolveEnd!: (turnEnd: TurnEnd) => void;
  private rejectEnd!: (err: ConnectError) => void;

  /**
   * Created by the conversation; not meant to be constructed by callers.
   * `requestId` is the input's idempotency key (re-sent with it after a reconnect).
   */
  constructor(
    readonly requestId = "",
    private readonly canceller?: (turn: Turn) => Promise<InputAck>,
  ) {
    this.end = new Promise<TurnEnd>((resolve, reject) => {
      this.resolveEnd = resolve;
      this.rejectEnd = reject;
    });
    this.end.catch(() => {}); // a turn nobody awaits must not surface as an unhandled rejection
  }

  /** True once the turn ended (TurnEnd received) or failed. */
  get done(): boolean {
    return this.log.done;
  }

  /** The chunks received so far (a copy). */
  get received(): AgentStreamChunk[] {
    return this.log.received;
  }

  /** Awaiting a turn awaits its TurnEnd. */
  then<R1 = TurnEnd, R2 = never>(
    onfulfilled?: ((value: TurnEnd) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.end.then(onfulfilled, onrejected);
  }

  /**
   * Cancels this turn while it runs, keeping the conversation: the server
   * aborts it (its TurnEnd says `finishReason: "aborted"`, nothing of it is
   * written) and the conversation goes on with the next input. Resolves with
   * the server's ack: `cancelled` (with the turn index), or
   * `nothing_to_cancel` when the turn had already ended (answered locally when
   * its TurnEnd had arrived). Sent once with its own request ID and never
   * re-sent after a reconnect (it then rejects with `Code.Unavailable`: the
   * turn may or may not have been cancelled; the turn itself is retried as
   * usual). Rejects with `Code.FailedPrecondition` for a turn queued behind
   * another (only the running turn can be cancelled) or a closed conversation.
   */
  cancel(): Promise<InputAck> {
    if (this.log.done) return Promise.resolve({ result: "nothing_to_cancel" });
    if (!this.canceller) return Promise.reject(new Error("this turn belongs to no conversation"));
    return this.canceller(this);
  }

  /** The concatenated text of the turn's model chunks, once the turn ended. */
  async text(): Promise<string> {
    await this.end;
    return this.log.modelText();
  }

  /** Replays the buffered chunks, then the live ones, ending after the TurnEnd chunk. */
  [Symbol.asyncIterator](): AsyncIterator<AgentStreamChunk> {
    return this.log[Symbol.asyncIterator]();
  }

  /** Records a chunk; a chunk carrying `turnEnd` ends the turn. Ignored once done. */
  push(chunk: AgentStreamChunk): void {
    if (this.log.done) return;
    this.log.append(chunk);
    if (chunk.turnEnd) {
      this.log.finish();
      this.resolveEnd(chunk.turnEnd);
    }
  }

  /** Fails the turn (no TurnEnd will come). Ignored once done. */
  fail(err: ConnectError): void {
    if (this.log.done) return;
    this.log.fail(err);
    this.rejectEnd(err);
  }
}
