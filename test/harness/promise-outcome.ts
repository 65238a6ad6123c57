/** The outcome of a promise so far, for tests that check whether it has settled yet. */
export interface PromiseOutcome {
  state: "pending" | "resolved" | "rejected";
  error?: unknown;
}

/** The outcome of `promise` so far, updated as it settles (handled from the start, so a rejection is never unhandled). */
export function outcomeOf(promise: Promise<unknown>): PromiseOutcome {
  const outcome: PromiseOutcome = { state: "pending" };
  promise.then(
    () => (outcome.state = "resolved"),
    (error: unknown) => Object.assign(outcome, { state: "rejected", error }),
  );
  return outcome;
}
