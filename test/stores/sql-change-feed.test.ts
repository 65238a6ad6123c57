import { describe, expect, it } from "vitest";
import { SqlChangeFeed } from "../../stores/sql/sql-change-feed.js";
import type { SqlChange, SqlEngine } from "../../stores/sql/sql-engine.js";

// The feed's own ordering rules, with the engine's change feed driven by hand: what a watcher is
// woken for when a re-read of the logs (after a reconnect) races a notification.

const KEY = { sessionId: "s1", snapshotId: "bg" };

/** The part of an engine the feed uses: `follow`, with the listener kept for the test to call. */
function followedEngine(): { engine: SqlEngine; change(change: SqlChange): void } {
  let listener: ((change: SqlChange) => void) | undefined;
  const engine = {
    following: true,
    follow(next: ((change: SqlChange) => void) | undefined) {
      listener = next;
    },
  } as unknown as SqlEngine;
  return { engine, change: (change) => listener?.(change) };
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
