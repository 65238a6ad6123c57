import type { SessionSnapshot, SnapshotStatus } from "../../src/types/snapshot.js";
import type { SessionState } from "../../src/types/session-state.js";

/** Custom state used by the store tests. */
export interface CounterState {
  n: number;
}

/** A complete row for tests; `snapshotId` is overwritten by the store. */
export function snapshotRow(
  sessionId: string,
  overrides: Partial<SessionSnapshot<CounterState>> = {},
): SessionSnapshot<CounterState> {
  const now = overrides.createdAt ?? Date.now();
  return {
    snapshotId: "",
    sessionId,
    turnIndex: 0,
    createdAt: now,
    updatedAt: now,
    status: "completed" as SnapshotStatus,
    state: { messages: [], artifacts: [], custom: { n: 0 } } satisfies SessionState<CounterState>,
    ...overrides,
  };
}

/** Resolves once `predicate` holds (polled every 10 ms), rejects after `timeoutMs`. */
export async function eventually(predicate: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
