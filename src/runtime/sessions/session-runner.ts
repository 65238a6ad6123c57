import type { ZodType } from "zod";
import type { AgentInput, TurnResult } from "../../types/agent-io.js";
import type { Message } from "../../types/content.js";
import type { SessionState } from "../../types/session-state.js";
import type { FinishReason } from "../../types/snapshot.js";
import type { AgentResult, TurnContext } from "./turn-context.js";
import { Session } from "./session.js";
import { PROCESS_TURN_SLICES, type TurnLine } from "./turn-slices.js";

/** The runtime's side of the turn loop (implemented by the invocation). */
export interface TurnLifecycle {
  /** The turn inputs, in order; ends when the client has no more input. */
  readonly inputs: AsyncIterable<AgentInput>;
  /** Reserves the turn's identity (snapshot ID) before it runs; `input` is what it runs. */
  beginTurn(turnIndex: number, input: AgentInput): TurnContext;
  /**
   * Optional: called before an input that carries a request ID runs. Resolves
   * true when the input was answered without running (a retry of a turn the
   * session already committed): the loop then skips it.
   */
  answered?(input: AgentInput): Promise<boolean>;
  /** Persists the turn-end snapshot (when due) and streams TurnEnd. */
  endTurn(turn: TurnContext, finishReason: FinishReason): Promise<void>;
  /** Streams a failed TurnEnd and rolls the session back to the last good state; nothing is persisted. `error` is why. */
  failTurn(turn: TurnContext, error?: unknown): Promise<void>;
  /**
   * Optional: after `failTurn`, true when the turn was stopped by a cancel
   * input: the loop then goes on with the next input instead of rethrowing.
   */
  cancelled?(turn: TurnContext): boolean;
  /**
   * Optional: runs one turn's work (the turn function and the turn end) in
   * the turn's telemetry context, so the spans it makes are the turn's children.
   */
  runInTurn?<T>(turn: TurnContext, work: () => Promise<T>): Promise<T>;
}

/**
 * A {@link Session} plus the turn loop. `run(fn)` calls `fn` once per input (the
 * input's message is added to the history first; the turn starts when the
 * process's {@link TurnSlices} admit it), except for inputs the
 * lifecycle answered already (retries of committed turns); after each successful turn
 * the snapshot is written and TurnEnd streamed. A throwing turn streams a failed
 * TurnEnd, writes nothing, and `run` rethrows; a turn stopped by a cancel input
 * streams an aborted TurnEnd, writes nothing, and the loop takes the next input.
 */
export class SessionRunner<S = unknown> extends Session<S> {
  /** Index of the next (or current) turn. */
  turnIndex: number;
  private readonly lifecycle: TurnLifecycle;
  private readonly slices: TurnLine;

  /** `slices`: where each turn waits for its start (default {@link PROCESS_TURN_SLICES}, tenant ""; an invocation passes its tenant's line). */
  constructor(
    state: SessionState<S>,
    schema: ZodType<S> | undefined,
    firstTurnIndex: number,
    lifecycle: TurnLifecycle,
    slices: TurnLine = PROCESS_TURN_SLICES,
  ) {
    super(state, schema);
    this.turnIndex = firstTurnIndex;
    this.lifecycle = lifecycle;
    this.slices = slices;
  }

  /** Runs `fn` for every input until the input side closes. Rethrows the first turn failure. */
  async run(fn: (input: AgentInput, turn: TurnContext) => Promise<TurnResult | void>): Promise<void> {
    for await (const input of this.lifecycle.inputs) {
      const admitted = this.slices.admit(); // under a burst of inputs, the turn waits for a later turn of the event loop
      if (admitted) await admitted;
      if (input.requestId && this.lifecycle.answered && (await this.lifecycle.answered(input))) continue;
      const turn = this.lifecycle.beginTurn(this.turnIndex, input);
      if (input.message) this.addMessages(input.message);
      const work = async (): Promise<boolean> => {
        try {
          const result = await fn(input, turn);
          await this.flushCustomEvents();
          await this.lifecycle.endTurn(turn, result?.finishReason ?? "stop");
          return true;
        } catch (err) {
          await this.lifecycle.failTurn(turn, err);
          if (this.lifecycle.cancelled?.(turn)) return false;
          throw err;
        }
      };
      // A cancelled turn wrote nothing: the next turn takes its index.
      if (await (this.lifecycle.runInTurn ? this.lifecycle.runInTurn(turn, work) : work())) this.turnIndex++;
    }
  }

  /** The default invocation result: the last model message and every artifact. */
  result(): AgentResult {
    return { ...this.lastModelMessage(), artifacts: [...this.artifacts()] };
  }

  /** `{ message }` with the history's last model message (searched from the end, no copy of the history), or `{}`. */
  private lastModelMessage(): { message?: Message } {
    for (let i = this.messageCount - 1; i >= 0; i--) {
      const message = this.messageAt(i)!;
      if (message.role === "model") return { message };
    }
    return {};
  }
}
