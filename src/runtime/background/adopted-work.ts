import type { AgentInput } from "../../types/agent-io.js";
import type { Usage } from "../../types/usage.js";
import type { CommittedPoint } from "../sessions/turn-record.js";

/** What a takeover hands the invocation that continues the work. */
export interface AdoptedWork<S> {
  /** The pending row (unchanged: the work keeps its snapshot ID). */
  snapshotId: string;
  /** The row's parent: the base of its state fields. */
  parent: CommittedPoint<S> | undefined;
  /** The tokens of the turns the row already holds. */
  usage?: Usage;
  /** The inputs still to run, in order (a continued turn's first one carries no message). */
  inputs: AgentInput[];
  /** The first input continues a turn cut after a checkpoint (`TurnContext.continued`). */
  continuesTurn: boolean;
  /** The sequence of the last completed turn's TurnEnd: later recorded chunks are superseded. */
  supersededAfter: number;
  /** The last sequence in the work's chunk log: the takeover's chunks are numbered after it. */
  lastRecordedSequence: number;
  /** This run's index in the work's runs (0: the run that detached it): its chunk appends carry it. */
  run: number;
}
