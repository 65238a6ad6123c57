import { Code, type CallOptions } from "@connectrpc/connect";
import { clientError } from "./client-errors.js";
import type { RetryBudget } from "./retrier.js";
import { INCOMPLETE_STREAM } from "./retryable-error.js";

/** How a server stream is re-opened after a failure and what of the new stream is passed on. */
export interface StreamResume<Res> {
  /** Opens (or re-opens) the stream with the attempt's call options. */
  open(options: CallOptions): AsyncIterable<Res>;
  /** Whether to pass `response` on: false for what was already delivered before a re-open. */
  deliver(response: Res): boolean;
  /** The stream is about to be re-opened. */
  reopened(): void;
  /** Whether `response` is the last one the stream owes (the output, a terminal status). */
  isFinal(response: Res): boolean;
}

/**
 * The responses of a server stream that re-opens itself (per `resume`) when
 * it fails retryably or ends before its final response, within `budget`
 * (a delivered response counts as progress). Throws the last error, or a
 * `Code.DataLoss` "stream ended without an output" one, when it gives up.
 */
export async function* retryingStream<Res>(budget: RetryBudget, resume: StreamResume<Res>): AsyncGenerator<Res, void> {
  for (;;) {
    let finished = false;
    try {
      for await (const response of resume.open(budget.callOptions())) {
        if (!resume.deliver(response)) continue;
        budget.progress();
        yield response;
        if (resume.isFinal(response)) finished = true;
      }
      if (finished) return;
      throw clientError(Code.DataLoss, `the ${budget.procedure} stream ${INCOMPLETE_STREAM}`);
    } catch (err) {
      if (finished) return; // the final response arrived: a failure after it changes nothing
      if (!(await budget.retry(err))) throw err;
    }
    resume.reopened();
  }
}

/**
 * A {@link StreamResume} for a stream of chunks ending with an output
 * (RunStream): after a re-open, the chunks already delivered are dropped (the
 * re-sent turn streams them again; a turn the server already committed
 * answers with its TurnEnd and output only, which always pass).
 */
export function chunkReplayResume<Res extends { chunk?: { turnEnd?: unknown }; output?: unknown }>(
  open: (options: CallOptions) => AsyncIterable<Res>,
): StreamResume<Res> {
  let delivered = 0;
  let skip = 0;
  return {
    open,
    deliver(response) {
      if (response.chunk && !response.chunk.turnEnd) {
        if (skip > 0) {
          skip--;
          return false;
        }
        delivered++;
      }
      return true;
    },
    reopened() {
      skip = delivered;
    },
    isFinal: (response) => response.output !== undefined,
  };
}
