import { describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { chunkWatchKey, SqlChangeFeed } from "../../stores/sql/sql-change-feed.js";
import type { SqlChange, SqlEngine } from "../../stores/sql/sql-engine.js";

// The feed's own ordering rules, with the engine's change feed driven by hand: what a watcher is
// woken for when a re-read of the logs (after a reconnect) races a notification.

const KEY = { sessionId: "s1", snapshotId: "bg" };

/**
 * The part of an engine the feed uses: `follow`, with the listener kept for the test to call and
 * each call recorded in `follows` (true: a listener, false: none).
 */
function followedEngine(): { engine: SqlEngine; change(change: SqlChange): void; follows: boolean[] } {
  let listener: ((change: SqlChange) => void) | undefined;
  const follows: boolean[] = [];
  const engine = {
    following: true,
    follow(next: ((change: SqlChange) => void) | undefined) {
      follows.push(next !== undefined);
      listener = next;
    },
  } as unknown as SqlEngine;
  return { engine, follows, change: (change) => listener?.(change) };
}

/** A last-sequence reader whose answers the test gives, one per read. */
function heldReads(): { read(): Promise<Map<string, number>>; answer(found: Map<string, number>): void } {
  const waiting: ((found: Map<string, number>) => void)[] = [];
  return {
    read: () => new Promise((resolve) => waiting.push(resolve)),
    answer: (found) => waiting.shift()!(found),
  };
}

/** Lets every queued promise reaction and I/O callback run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Counts a watcher's wake-ups as they come. */
function countWakes(channel: AsyncIterable<void>): { readonly count: number } {
  const counter = { count: 0 };
  void (async () => {
    for await (const _ of channel) counter.count++;
  })();
  return counter;
}

/** A feed whose engine changes and log reads the test drives, watching {@link KEY}'s log (seen empty). */
function watchedFeed() {
  const { engine, change } = followedEngine();
  const reads = heldReads();
  const feed = new SqlChangeFeed(engine, async () => new Map(), reads.read);
  const stop = new AbortController();
  const wakes = countWakes(feed.watchChunks(KEY, stop.signal, 0));
  return { change, reads, wakes, stop: () => stop.abort() };
}

describe("SqlChangeFeed: chunk watchers", () => {
  it("a re-read that found no log while a notification arrived does not wake the watcher again as a removal", async () => {
    const { change, reads, wakes, stop } = watchedFeed();
    change({ kind: "unknown" }); // a reconnect: the logs are re-read
    change({ kind: "chunks", ...KEY, lastSequence: 1 }); // an append's notification, while the read runs
    await settle();
    expect(wakes.count).toBe(1);
    reads.answer(new Map()); // the read ran before the append: no log yet
    await settle();
    expect(wakes.count).toBe(1);
    stop();
  });

  it("a re-read that finds a seen log gone wakes the watcher (a removal)", async () => {
    const { change, reads, wakes, stop } = watchedFeed();
    change({ kind: "chunks", ...KEY, lastSequence: 1 });
    await settle();
    change({ kind: "unknown" });
    reads.answer(new Map());
    await settle();
    expect(wakes.count).toBe(2);
    stop();
  });
});

const noStatuses = async () => new Map<string, { status: string; version: number }>();

describe("SqlChangeFeed: following the engine, and re-reads", () => {
  it("follows the engine only while someone subscribes or watches, also again after closeAll", () => {
    const { engine, follows } = followedEngine();
    const feed = new SqlChangeFeed(engine, noStatuses, async () => new Map());
    const subscriber = new AbortController();
    const watcher = new AbortController();
    feed.subscribeStatus("a", subscriber.signal);
    feed.watchChunks(KEY, watcher.signal);
    expect(follows).toEqual([true]);
    subscriber.abort();
    expect(follows).toEqual([true]); // the watcher remains
    watcher.abort();
    expect(follows).toEqual([true, false]);
    expect([feed.subscriberCount, feed.watcherCount]).toEqual([0, 0]);
    feed.watchChunks(KEY, new AbortController().signal);
    expect(follows).toEqual([true, false, true]);
    feed.closeAll();
    expect([follows.at(-1), feed.watcherCount]).toEqual([false, 0]);
    feed.watchChunks(KEY, new AbortController().signal);
    expect(follows.at(-1)).toBe(true);
  });

  it("ends a subscription with the error of its first status read", async () => {
    const { engine } = followedEngine();
    const failure = new AgentError("UNAVAILABLE", "the database is gone");
    const feed = new SqlChangeFeed(
      engine,
      () => Promise.reject(failure),
      async () => new Map(),
    );
    const statuses = feed.subscribeStatus("a", new AbortController().signal);
    const ended = (async () => {
      for await (const _ of statuses) return "a status";
      return "ended without error";
    })();
    await expect(ended).rejects.toBe(failure);
  });

  it("a watcher begun before its log exists is woken once the log appears, one begun after takes the log as it is", async () => {
    const { engine, change } = followedEngine();
    const sequences = new Map<string, number>();
    const feed = new SqlChangeFeed(engine, noStatuses, async () => new Map(sequences));
    const early = countWakes(feed.watchChunks(KEY, new AbortController().signal));
    change({ kind: "unknown" }); // no log yet
    await settle();
    expect(early.count).toBe(0);
    sequences.set(chunkWatchKey(KEY), 3); // another process appended 1..3
    change({ kind: "unknown" });
    await settle();
    expect(early.count).toBe(1);

    const other = { ...KEY, snapshotId: "other" };
    const late = countWakes(feed.watchChunks(other, new AbortController().signal));
    sequences.set(chunkWatchKey(other), 5); // appended before this watch's first re-read
    change({ kind: "unknown" });
    await settle();
    expect(late.count).toBe(0);
    sequences.set(chunkWatchKey(other), 6);
    change({ kind: "unknown" });
    await settle();
    expect(late.count).toBe(1);
  });

  it("coalesces unknown changes that arrive during a re-read into one more re-read after it", async () => {
    const { engine, change } = followedEngine();
    const reads: (() => void)[] = [];
    const feed = new SqlChangeFeed(
      engine,
      (ids) =>
        new Promise((resolve) =>
          reads.push(() => resolve(new Map(ids.map((id) => [id, { status: "pending", version: 1 }])))),
        ),
      async () => new Map(),
    );
    feed.subscribeStatus("a", new AbortController().signal);
    reads.shift()!(); // the subscription's own first read
    change({ kind: "unknown" });
    await settle();
    expect(reads).toHaveLength(1); // the re-read is under way
    change({ kind: "unknown" });
    change({ kind: "unknown" });
    await settle();
    expect(reads).toHaveLength(1); // the changes during it wait for it
    reads.shift()!();
    await settle();
    expect(reads).toHaveLength(1); // then one more re-read covers them both
    reads.shift()!();
    await settle();
    expect(reads).toHaveLength(0);
  });
});
