import type { SessionHead, SessionStore, StoreCallContext } from "../../../stores/snapshot-store.js";
import { effectiveStatus, takeoverDue, type LivenessSettings } from "../sessions/snapshot-liveness.js";
import { startPeriodicTask } from "./periodic-task.js";
import { dropLease } from "../sessions/session-claim.js";
import { holderGone, type LeaseSelf } from "../sessions/lease-holder.js";

/** How many leased heads one pass looks at per store. */
const HEADS_PER_PASS = 100;

/** An agent as the takeover poller sees it. */
export interface TakeoverAgent {
  readonly store: SessionStore<unknown> | undefined;
  takeOver(head: SessionHead, row: NonNullable<Awaited<ReturnType<SessionStore["getRecord"]>>>): Promise<boolean>;
}

/** What the poller needs from the registry. */
export interface TakeoverSource {
  /** The stores to poll (each once). */
  stores(): SessionStore[];
  /** The agent of that name served here, or undefined. */
  agent(name: string): TakeoverAgent | undefined;
  liveness: LivenessSettings;
  /**
   * Called for a head whose lapsed lease is about to be dropped because its
   * row's work is over (or expired), before the drop; a rejection keeps the
   * lease for the next pass (the webhook relay uses it: see `WebhookRelay`).
   */
  settled?: SettledHook;
  /**
   * This process: a lease whose holder is provably dead by it (see
   * `holderGone`) counts as lapsed at once, so a restarted instance frees
   * what its predecessor held on its first pass.
   */
  self?: LeaseSelf;
}

/** See {@link TakeoverSource.settled}. */
export type SettledHook = (
  store: SessionStore,
  head: SessionHead,
  row: NonNullable<Awaited<ReturnType<SessionStore["getRecord"]>>>,
  liveness: LivenessSettings,
) => Promise<void>;

/** What a pass reports when it took work over or failed. */
export interface TakeoverReport {
  /** Pending rows whose work this pass took over. */
  takenOver?: number;
  error?: unknown;
}

/**
 * One pass: in every store that lists leased heads, finds the sessions whose
 * head is detached work with a dead worker ({@link takeoverDue}) and takes
 * each over when its agent is served here (with the same store); the work of
 * agents not served here is left alone. Also drops lapsed leases left on
 * heads whose work is over (an invocation killed mid-turn), so they do not
 * crowd the listing, and, likewise, leases whose holder is known dead
 * (`source.self`), without waiting for their expiry. Resolves to how many rows it took over; rejects with
 * the first error after trying every head.
 */
export async function takeOverDeadWork(source: TakeoverSource): Promise<number> {
  let takenOver = 0;
  let firstError: unknown;
  for (const store of source.stores()) {
    if (!store.listLeasedHeads) continue;
    let heads: SessionHead[];
    try {
      heads = await store.listLeasedHeads(HEADS_PER_PASS);
    } catch (err) {
      firstError ??= err;
      continue;
    }
    for (const head of heads) {
      try {
        if (await visit(source, store, head)) takenOver++;
      } catch (err) {
        firstError ??= err;
      }
    }
  }
  if (firstError !== undefined) throw firstError;
  return takenOver;
}

async function visit(source: TakeoverSource, store: SessionStore, head: SessionHead): Promise<boolean> {
  const ctx: StoreCallContext = { tenant: head.owner };
  const row = await store.getRecord(head.headSnapshotId, ctx);
  if (!row) return false;
  const now = Date.now();
  const agent = source.agent(head.agent);
  if (takeoverDue(row, source.liveness, now)) {
    return agent?.store === store ? agent.takeOver(head, row) : false;
  }
  const lapsed =
    head.lease !== undefined &&
    (head.lease.expiresAt <= now || (source.self !== undefined && holderGone(head.lease.holder, source.self)));
  if (lapsed && effectiveStatus(row, source.liveness, now) !== "pending") {
    await source.settled?.(store, head, row, source.liveness);
    await dropLease(store, head, now, ctx);
  }
  return false;
}

/**
 * Runs {@link takeOverDeadWork} now and then every `intervalMs` (passes
 * never overlap; the timer does not keep the process alive). Returns a stop
 * function that waits for a running pass.
 */
export function startWorkTakeover(
  source: TakeoverSource,
  intervalMs: number,
  report: (outcome: TakeoverReport) => void,
): () => Promise<void> {
  return startPeriodicTask(
    async () => {
      const takenOver = await takeOverDeadWork(source);
      if (takenOver > 0) report({ takenOver });
    },
    intervalMs,
    (error) => report({ error }),
  );
}
