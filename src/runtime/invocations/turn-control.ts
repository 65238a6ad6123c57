import { AgentError } from "../../errors/agent-error.js";
import type { AgentInput, AgentStreamChunk, InputAck } from "../../types/agent-io.js";
import type { Message } from "../../types/content.js";
import type { AsyncChannel } from "../../streams/async-channel.js";
import { inputBytes } from "./input-bytes.js";
import type { TenantInputHold } from "../sessions/tenant-input-budget.js";

/** How much input one invocation and one turn may hold (see `InputLimits`). */
export interface TurnControlLimits {
  /** Inputs queued ahead of the running turn (`maxQueuedInputs`); steers queued as turns count too. */
  maxQueued: number;
  /** Steers one turn accepts. */
  maxSteersPerTurn: number;
  /** Bytes of inputs waiting on the invocation, and of steers one turn accepts (`--max-waiting-input-bytes`). */
  maxWaitingInputBytes: number;
}

/** The turn a {@link TurnControl} can still cancel or steer. */
interface RunningTurn {
  readonly index: number;
  /** Fires on a cancel input, and when the invocation's work aborts. */
  readonly abort: AbortController;
  /** Removes the listener that forwards the work's abort. */
  readonly release: () => void;
  /** Steer inputs waiting for the turn to take them (`takeSteering`). */
  readonly steers: AgentInput[];
  /** Set by a cancel input. */
  cancelled: boolean;
  /** Steers this turn accepted (taken or waiting), and their bytes. */
  acceptedSteers: number;
  acceptedBytes: number;
}

/**
 * Control inputs of one invocation, handled as they arrive rather than
 * queued behind the running turn: a cancel aborts the running turn's own
 * signal (the invocation goes on with its next input); a steer waits for the
 * running turn to take it (`takeSteering`, e.g. before the tool loop's next
 * model call), and when the turn ends without taking it, it runs as the next
 * turn (before inputs queued after it). Every control input is answered by
 * an InputAck chunk. A turn stops being cancellable or steerable once it is
 * sealed (its end is decided: committing or failing).
 *
 * What an invocation holds is bounded ({@link TurnControlLimits}): the
 * bytes of the inputs and steers waiting on it, the steers one turn accepts
 * (count and bytes), and the steers queued as turns; past a bound an input
 * is refused with RESOURCE_EXHAUSTED naming it, before it is kept.
 */
export class TurnControl {
  private running: RunningTurn | undefined;
  /** Steers a turn did not take: the next turns' inputs, before the channel's. */
  private readonly requeued: AgentInput[] = [];
  private lastCancelled = false;
  /** A turn input was taken from the queue and its turn has not begun yet. */
  private starting = false;
  /** A cancel that arrived while the next turn was about to begin (its request ID, or ""). */
  private cancelOnBegin: string | undefined;

  /**
   * `emit`: streams an ack chunk behind the chunks before it. `queue`: the
   * invocation's turn inputs. `hold`: this invocation's share of its
   * tenant's waiting-input budget, kept equal to the bytes waiting here.
   */
  constructor(
    private readonly emit: (chunk: AgentStreamChunk) => void,
    private readonly limits: TurnControlLimits,
    private readonly queue?: AsyncChannel<AgentInput>,
    private readonly hold?: TenantInputHold,
  ) {}

  /** Bytes of the inputs waiting on this invocation: queued on `queue`, steers not taken, steers requeued. */
  private waitingBytes(queue: AsyncChannel<AgentInput> | undefined): number {
    let waiting = 0;
    for (const list of [queue?.queued() ?? [], this.running?.steers ?? [], this.requeued])
      for (const item of list) waiting += inputBytes(item);
    return waiting;
  }

  /**
   * Resizes the tenant hold to what waits now: called after an input was
   * kept, taken or dropped. No-op without a hold.
   */
  settle(): void {
    if (this.hold) this.hold.resize(this.waitingBytes(this.queue));
  }

  /** The invocation ended: frees all it held of its tenant's budget (whatever still waits is dropped). */
  releaseHold(): void {
    this.hold?.release();
  }

  /**
   * Checks that `input` may wait on this invocation: the bytes of what
   * waits (inputs queued on `queue`, steers the running turn has not taken,
   * steers requeued as turns) plus its own stay within
   * `maxWaitingInputBytes`, and its tenant's waiting bytes across its
   * invocations stay within its budget (`--tenant-max-waiting-input-bytes`).
   * Throws RESOURCE_EXHAUSTED naming the limit; the caller keeps the input
   * and then calls {@link settle}.
   */
  admitWaiting(input: AgentInput, queue: AsyncChannel<AgentInput>): void {
    const bytes = inputBytes(input);
    const waiting = this.waitingBytes(queue);
    if (waiting + bytes <= this.limits.maxWaitingInputBytes) {
      this.hold?.admit(waiting, bytes);
      return;
    }
    throw new AgentError(
      "RESOURCE_EXHAUSTED",
      `this invocation already holds ${waiting} bytes of waiting inputs and steers; one more of ${bytes} bytes would pass the limit of ${this.limits.maxWaitingInputBytes} (--max-waiting-input-bytes): wait for a TurnEnd before sending more`,
      { details: { waitingInputBytes: waiting, maxWaitingInputBytes: this.limits.maxWaitingInputBytes } },
    );
  }

  /**
   * The turn inputs: the requeued steers first, then `channel`'s. Requeueing
   * happens while a turn ends, before the turn loop asks for the next input,
   * so a steer is never left behind a closed channel.
   */
  inputs(channel: AsyncIterable<AgentInput>): AsyncIterable<AgentInput> {
    return {
      [Symbol.asyncIterator]: () => {
        const source = channel[Symbol.asyncIterator]();
        return {
          next: () => {
            const steer = this.requeued.shift();
            const next = steer ? Promise.resolve({ done: false, value: steer }) : source.next();
            return next.then((result) => {
              this.starting = result.done !== true;
              this.settle();
              return result;
            });
          },
          return: () => source.return?.() ?? Promise.resolve({ done: true, value: undefined }),
        };
      },
    };
  }

  /**
   * Handles a control input as it arrives; returns its ack (for a steer kept
   * for the running turn: `steered`, streamed once the turn takes it). A
   * steer no turn can take is queued on `queue` (or, once `queue` is closed,
   * after the running turn); with neither, FAILED_PRECONDITION.
   * RESOURCE_EXHAUSTED, with nothing kept, when the steer would pass a
   * bound: the waiting bytes ({@link admitWaiting}), the running turn's
   * steers (count or bytes), or the queue's length.
   */
  apply(
    control: "cancel" | "steer",
    steer: AgentInput | undefined,
    requestId: string | undefined,
    queue: AsyncChannel<AgentInput>,
  ): InputAck {
    if (control === "cancel") return this.cancel(requestId || undefined, queue.size > 0);
    const input = steer!;
    this.admitWaiting(input, queue);
    const turnIndex = this.steer(input, queue.size > 0);
    if (turnIndex !== undefined) {
      this.settle();
      return { result: "steered", turnIndex, ...(input.requestId ? { requestId: input.requestId } : {}) };
    }
    if (queue.size + this.requeued.length >= this.limits.maxQueued)
      throw new AgentError(
        "RESOURCE_EXHAUSTED",
        `${queue.size + this.requeued.length} inputs are already queued on this invocation (the limit is ${this.limits.maxQueued}); wait for a TurnEnd before sending more`,
        { details: { maxQueuedInputs: this.limits.maxQueued } },
      );
    if (!queue.isClosed) queue.push(input);
    else if (!this.requeue(input))
      throw new AgentError(
        "FAILED_PRECONDITION",
        "no turn is running and the invocation takes no more input: send the message as a new turn in a new call",
      );
    this.settle();
    return this.queued(input);
  }

  /** The steers waiting to run as turns (what detach records before the queued inputs). */
  get queuedSteers(): readonly AgentInput[] {
    return this.requeued;
  }

  /** Starts turn `index`: its signal fires on a cancel input or when `work` aborts. */
  begin(index: number, work: AbortSignal): AbortSignal {
    this.starting = false;
    const abort = new AbortController();
    const forward = (): void => abort.abort(work.reason);
    if (work.aborted) forward();
    else work.addEventListener("abort", forward, { once: true });
    this.running = {
      index,
      abort,
      release: () => work.removeEventListener("abort", forward),
      steers: [],
      cancelled: false,
      acceptedSteers: 0,
      acceptedBytes: 0,
    };
    const early = this.cancelOnBegin;
    if (early !== undefined) {
      this.cancelOnBegin = undefined;
      this.cancel(early || undefined, false);
    }
    return abort.signal;
  }

  /** The input taken from the queue was answered without a turn (a retry of a committed one). */
  skipped(): void {
    this.starting = false;
  }

  /**
   * A cancel input: aborts the running turn (ack `cancelled`). With no turn
   * running, when an input is about to start its turn (`inputWaiting`: one
   * is queued, or one was taken and its turn has not begun) that turn is
   * cancelled as it begins (acked then; the returned ack has no turn index);
   * otherwise acks `nothing_to_cancel`.
   */
  cancel(requestId: string | undefined, inputWaiting: boolean): InputAck {
    const turn = this.running;
    if (!turn && (this.starting || inputWaiting) && this.cancelOnBegin === undefined) {
      this.cancelOnBegin = requestId ?? "";
      return { result: "cancelled", ...(requestId ? { requestId } : {}) };
    }
    if (!turn || turn.abort.signal.aborted) return this.ack({ result: "nothing_to_cancel" }, requestId);
    turn.cancelled = true;
    turn.abort.abort(new AgentError("ABORTED", `turn ${turn.index} was cancelled by a cancel input`));
    return this.ack({ result: "cancelled", turnIndex: turn.index }, requestId);
  }

  /**
   * A steer input (`input` holds its message): kept for the running turn
   * (returns its index; acked once taken, or once requeued), or undefined
   * when no turn can take it (the caller queues it as a turn input
   * and acks `queued`). `queuedBehind`: inputs already wait for their turn
   * (the steer then queues behind them, keeping the order of sending).
   * RESOURCE_EXHAUSTED when the turn already accepted `maxSteersPerTurn`
   * steers, or the steer's bytes would take it past `maxWaitingInputBytes`.
   */
  private steer(input: AgentInput, queuedBehind: boolean): number | undefined {
    const turn = this.running;
    if (!turn || turn.abort.signal.aborted || queuedBehind || this.requeued.length > 0) return undefined;
    const bytes = inputBytes(input);
    if (turn.acceptedSteers >= this.limits.maxSteersPerTurn)
      throw new AgentError(
        "RESOURCE_EXHAUSTED",
        `turn ${turn.index} already accepted ${turn.acceptedSteers} steers (the limit per turn is ${this.limits.maxSteersPerTurn}): send the message as an input after its TurnEnd`,
        { details: { turnIndex: turn.index, maxSteersPerTurn: this.limits.maxSteersPerTurn } },
      );
    if (turn.acceptedBytes + bytes > this.limits.maxWaitingInputBytes)
      throw new AgentError(
        "RESOURCE_EXHAUSTED",
        `turn ${turn.index} already accepted ${turn.acceptedBytes} bytes of steers; ${bytes} more would pass the limit of ${this.limits.maxWaitingInputBytes} (--max-waiting-input-bytes): send the message as an input after its TurnEnd`,
        { details: { turnIndex: turn.index, maxWaitingInputBytes: this.limits.maxWaitingInputBytes } },
      );
    turn.acceptedSteers++;
    turn.acceptedBytes += bytes;
    turn.steers.push(input);
    return turn.index;
  }

  /**
   * Queues a steer to run after the running turn, when the input channel is
   * closed (detached work); false when no turn is running (nothing would
   * ever take it).
   */
  private requeue(input: AgentInput): boolean {
    if (!this.running) return false;
    this.requeued.push(input);
    return true;
  }

  /** Acks a steer that the caller queued as a turn input. */
  private queued(input: AgentInput): InputAck {
    return this.ack({ result: "queued" }, input.requestId);
  }

  /** The running turn takes its waiting steers (acked `steered`), oldest first; their messages. */
  take(): Message[] {
    const turn = this.running;
    if (!turn || turn.steers.length === 0 || turn.abort.signal.aborted) return [];
    const taken = turn.steers.splice(0);
    this.settle();
    for (const steer of taken) this.ack({ result: "steered", turnIndex: turn.index }, steer.requestId);
    return taken.map((steer) => steer.message!);
  }

  /**
   * The running turn's end is decided: later cancels find nothing to cancel,
   * and the steers it did not take run as the next turns (acked `queued`).
   */
  seal(): void {
    const turn = this.running;
    if (!turn) return;
    this.running = undefined;
    turn.release();
    for (const steer of turn.steers.splice(0)) {
      this.requeued.push(steer);
      this.queued(steer);
    }
    this.lastCancelled = turn.cancelled;
  }

  /** Whether the last sealed turn had been stopped by a cancel input. */
  get sealedByCancel(): boolean {
    return this.lastCancelled;
  }

  private ack(ack: InputAck, requestId: string | undefined): InputAck {
    if (requestId) ack.requestId = requestId;
    this.emit({ inputAck: { ...ack } });
    return ack;
  }
}
