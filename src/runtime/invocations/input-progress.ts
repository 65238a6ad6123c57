import { tapStream } from "../../streams/stream-tap.js";
import type { AgentInput } from "../../types/agent-io.js";
import type { DetachedWork } from "../../types/detached-work.js";
import type { Principal } from "../../types/principal.js";
import type { SessionState } from "../../types/session-state.js";

/** What detach records of the work still to run (see {@link DetachedWork}), without its runs. */
export type RemainingWork = Omit<DetachedWork, "runs" | "completed">;

/**
 * Where an invocation's inputs stand: which input's turn is running and not
 * yet committed, which turn index the next input gets, and the stream
 * position of the last TurnEnd. What detach records so that another instance
 * can take the work over (the running input first, then the queued ones).
 */
export class InputProgress {
  private running: AgentInput | undefined;
  /** An input was pulled whose turn has not yet ended with a TurnEnd. */
  private unanswered = false;
  private nextTurnIndex: number;
  private lastTurnEnd = 0;

  /** `firstTurnIndex`: the index the invocation's first turn gets. */
  constructor(firstTurnIndex: number) {
    this.nextTurnIndex = firstTurnIndex;
  }

  /**
   * True when the turn of every input pulled so far ended with a TurnEnd
   * from its commit (or, for a retry, from the commit it repeats): nothing
   * of them is left to write. False while an input's turn runs or failed.
   */
  get allAnswered(): boolean {
    return !this.unanswered;
  }

  /** The sequence of the last TurnEnd chunk (0 before any). */
  get lastTurnEndSequence(): number {
    return this.lastTurnEnd;
  }

  /** Yields `inputs`, noting each as running; `turnIndexOf()` is the index of the turn it starts. */
  pulled(inputs: AsyncIterable<AgentInput>, turnIndexOf: () => number): AsyncIterable<AgentInput> {
    return tapStream(inputs, {
      item: (input) => {
        this.running = input;
        this.unanswered = true;
        this.nextTurnIndex = turnIndexOf() + 1;
      },
    });
  }

  /** The running turn was committed as an attached turn: it is no longer part of detached work. */
  committed(): void {
    this.running = undefined;
  }

  /** The running input got the TurnEnd of its commit (or of the commit a retry repeats), queued to the client. */
  answered(): void {
    this.unanswered = false;
  }

  /** The running turn ended with a TurnEnd at `sequence`. */
  turnEnded(sequence: number): void {
    this.lastTurnEnd = sequence;
    this.running = undefined;
  }

  /**
   * What detach records: the running input and then `queued`, the turn index
   * of the first, the stream position, the principal, and `initialState`
   * when the session has no committed snapshot (the row then has no parent).
   */
  remainingWork(
    queued: readonly AgentInput[],
    principal: Principal,
    initialState: SessionState<unknown> | undefined,
  ): RemainingWork {
    const running = this.running;
    return {
      inputs: [...(running ? [running] : []), ...queued],
      firstTurnIndex: running ? this.nextTurnIndex - 1 : this.nextTurnIndex,
      lastSequence: this.lastTurnEnd,
      principal: { subject: principal.subject, tenant: principal.tenant, claims: { ...principal.claims } },
      ...(initialState ? { initialState } : {}),
    };
  }
}
