import type { Collection } from "mongodb";
import { acrossFailover } from "./failover-retry.js";
import { pendingCommitPath, type HeadDocument } from "./head-document.js";
import type { RecordDocument } from "./record-document.js";

/** How long settled tokens wait for the next head write of their session before a write of their own removes them. */
export const SETTLED_FLUSH_MS = 5_000;

/** How long one settle keeps retrying across a failover. */
const SETTLE_WINDOW_MS = 30_000;

/** The collections a settlement writes. */
export interface SettlementCollections {
  records: Collection<RecordDocument>;
  heads: Collection<HeadDocument>;
}

/**
 * Settling the commits of one store instance: clearing the `pending` mark
 * of a record whose commit landed, then removing its token from the head's
 * `pendingCommits` (the proof readers use until the mark is cleared).
 *
 * Guarantees: the record's mark is cleared first, so the head never loses
 * the proof of a record still marked; each clear is retried across a
 * failover (for up to 30 s) and, if it still fails, the proof stays on the
 * head, where the next read of the record or the sweep finds it and settles
 * again: an acknowledged record never becomes invisible. Removing the token
 * from the head costs no write of its own when this instance writes the
 * session's head again within {@link SETTLED_FLUSH_MS} (the tokens ride on
 * that write, see {@link take}); otherwise one small `$unset` does it.
 */
export class CommitSettlement {
  /** Settles in flight: close() waits for them. */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Tokens whose records are settled, per session, not yet removed from the head. */
  private readonly settled = new Map<string, Set<string>>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly collections: () => Promise<SettlementCollections>,
    private readonly closed: () => boolean,
  ) {}

  /**
   * Clears the mark of record `recordId` (only while it carries `token`),
   * retried across a failover, without the caller waiting; then queues the
   * token's removal from the head. Never throws.
   */
  settle(sessionId: string, recordId: string, token: string): void {
    const run = (async () => {
      const { records } = await this.collections();
      await acrossFailover(
        `settling snapshot ${recordId}`,
        { deadline: Date.now() + SETTLE_WINDOW_MS, closed: this.closed },
        () => records.updateOne({ _id: recordId, commitToken: token }, { $unset: { pending: "" } }),
      );
      this.queue(sessionId, token);
    })().catch(() => undefined);
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
  }

  /** The settled tokens of `sessionId` to remove with its next head write (give them back with {@link putBack} if it fails). */
  take(sessionId: string): string[] {
    const tokens = this.settled.get(sessionId);
    if (!tokens) return [];
    this.settled.delete(sessionId);
    return [...tokens];
  }

  /** Tokens {@link take} handed out whose head write did not land. */
  putBack(sessionId: string, tokens: readonly string[]): void {
    for (const token of tokens) this.queue(sessionId, token);
  }

  /** True when nothing is in flight or queued: {@link flush} would have nothing to do. */
  get idle(): boolean {
    return this.inFlight.size === 0 && this.settled.size === 0;
  }

  /** Waits for the settles in flight, then removes every queued token from its head. Never throws. */
  async flush(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const all = [...this.settled.entries()];
    this.settled.clear();
    if (all.length === 0) return;
    const { heads } = await this.collections().catch(() => ({ heads: undefined }));
    if (!heads) return;
    await Promise.allSettled(
      all.map(([sessionId, tokens]) =>
        heads.updateOne(
          { _id: sessionId },
          { $unset: Object.fromEntries([...tokens].map((t) => [pendingCommitPath(t), ""] as const)) },
        ),
      ),
    );
  }

  private queue(sessionId: string, token: string): void {
    let tokens = this.settled.get(sessionId);
    if (!tokens) this.settled.set(sessionId, (tokens = new Set()));
    tokens.add(token);
    if (!this.flushTimer && !this.closed()) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined;
        void this.flush();
      }, SETTLED_FLUSH_MS);
      this.flushTimer.unref();
    }
  }
}
