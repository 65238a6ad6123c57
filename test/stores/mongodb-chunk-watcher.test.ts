import { describe, expect, it } from "vitest";
import { ChunkWatcher } from "../../stores/mongodb/chunk-stream.js";
import { WakeChannel } from "../../stores/wake-channel.js";

// A watcher's baseline read is sent before any later append, but on another pooled connection the
// server may serve it after that append landed: the baseline then already counts the append. An
// append this instance made after the call must wake the watcher all the same (it failed once in
// CI: "wakes for an append made after the call" on MongoDB, no wake-up within 10 s).

/** A watcher whose baseline read answers when `answer` is called; `wakes()` counts pending wake-ups taken. */
function watcherWithHeldBaseline() {
  let answer!: (sequence: number) => void;
  const baseline = new Promise<number>((resolve) => (answer = resolve));
  const channel = new WakeChannel(new AbortController().signal, () => {});
  const watcher = new ChunkWatcher({ sessionId: "s", snapshotId: "p" }, channel, baseline);
  const iterator = channel[Symbol.asyncIterator]();
  /** True when a wake-up is pending (taken within a few event-loop turns). */
  const woke = async (): Promise<boolean> =>
    Promise.race([iterator.next().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 50))]);
  return { watcher, answer, woke, channel };
}

describe("ChunkWatcher (MongoDB chunk log)", () => {
  it("wakes for its own instance's append even when the baseline read, served late, already counts it", async () => {
    const { watcher, answer, woke, channel } = watcherWithHeldBaseline();
    watcher.appended(1);
    answer(1);
    await watcher.baseline;
    expect(await woke()).toBe(true);
    channel.close();
  });

  it("does not wake for a stream event at or below a baseline that already counts it", async () => {
    const { watcher, answer, woke, channel } = watcherWithHeldBaseline();
    watcher.offer(1);
    answer(1);
    await watcher.baseline;
    expect(await woke()).toBe(false);
    channel.close();
  });
});
