// BackgroundWork.drain at shutdown: waits for the tracked tasks up to a deadline, cancels only
// the ones still running then, and leaves no timer behind.
import { afterEach, describe, expect, it, vi } from "vitest";
import { deferred } from "./runtime-fixtures.js";
import { BackgroundWork, type BackgroundTask } from "../../src/runtime/background/background-work.js";

afterEach(() => {
  vi.useRealTimers();
});

/** A task that ends when `finish()` is called or when it is cancelled for shutdown. */
function task(): BackgroundTask & { finish(): void; cancelled: boolean } {
  const done = deferred<void>();
  const t = {
    done: done.promise,
    cancelled: false,
    finish: () => done.resolve(),
    cancelForShutdown: () => {
      t.cancelled = true;
      done.resolve();
    },
  };
  return t;
}

describe("BackgroundWork.drain", () => {
  it("cancels the tasks still running at the deadline and resolves to their number", async () => {
    const work = new BackgroundWork();
    const finished = task();
    const stuck = task();
    work.track(finished);
    work.track(stuck);
    finished.finish();
    expect(await work.drain(10)).toBe(1);
    expect([finished.cancelled, stuck.cancelled]).toEqual([false, true]);
    expect(work.size).toBe(0);
  });

  it("cancels nothing when the tasks it waits for end in time, not even one tracked meanwhile", async () => {
    const work = new BackgroundWork();
    const first = task();
    work.track(first);
    const draining = work.drain(60_000);
    const late = task();
    work.track(late);
    first.finish();
    expect(await draining).toBe(0);
    expect(late.cancelled).toBe(false);
    expect(work.size).toBe(1);
    late.finish();
  });

  it("leaves no deadline timer behind once the tasks ended in time", async () => {
    vi.useFakeTimers();
    const work = new BackgroundWork();
    const t = task();
    work.track(t);
    const draining = work.drain(60_000);
    t.finish();
    expect(await draining).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
