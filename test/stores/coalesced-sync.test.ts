import { describe, expect, it } from "vitest";
import { CoalescedSync } from "../../stores/file/coalesced-sync.js";
import { outcomeOf } from "../harness/promise-outcome.js";

// Coalesced fsyncs (stores/file/coalesced-sync.ts): a request resolves after a run of the sync
// function that started after it; requests made during a run share the one run queued behind it.
// The sync function here is a stand-in whose runs finish when the test says so.

/** A sync function whose runs finish only when the test finishes or fails the one in flight. */
function heldSync(): {
  sync: () => Promise<void>;
  /** How many runs have started. */
  started: () => number;
  /** How many runs are in flight (started and not finished). */
  inFlight: () => number;
  /** Finishes the run in flight. */
  finish: () => void;
  /** Fails the run in flight with `error`. */
  fail: (error: Error) => void;
} {
  const runs: { resolve: () => void; reject: (error: Error) => void }[] = [];
  let done = 0;
  const current = () => {
    expect(runs.length - done, "runs in flight").toBe(1);
    return runs[done++]!;
  };
  return {
    sync: () => new Promise<void>((resolve, reject) => runs.push({ resolve, reject })),
    started: () => runs.length,
    inFlight: () => runs.length - done,
    finish: () => current().resolve(),
    fail: (error) => current().reject(error),
  };
}

/** Lets every pending promise callback run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe("CoalescedSync.request", () => {
  it("starts a run for a request made while idle and resolves it when that run finishes", async () => {
    const held = heldSync();
    const coalesced = new CoalescedSync(held.sync);
    const request = outcomeOf(coalesced.request());
    expect(held.started()).toBe(1);
    await settle();
    expect(request.state).toBe("pending");
    held.finish();
    await settle();
    expect(request.state).toBe("resolved");
  });

  it("does not start a second run while one is in flight", async () => {
    const held = heldSync();
    const coalesced = new CoalescedSync(held.sync);
    void coalesced.request();
    void coalesced.request();
    await settle();
    expect(held.started()).toBe(1);
  });

  it("resolves a request made during a run only after a run started after it has finished", async () => {
    const held = heldSync();
    const coalesced = new CoalescedSync(held.sync);
    const first = outcomeOf(coalesced.request());
    const later = outcomeOf(coalesced.request());
    held.finish(); // the run that was in flight when `later` was made
    await settle();
    expect(first.state).toBe("resolved");
    expect(later.state).toBe("pending");
    expect(held.started()).toBe(2);
    held.finish();
    await settle();
    expect(later.state).toBe("resolved");
  });

  it("lets the requests made during a run share the one run queued behind it", async () => {
    const held = heldSync();
    const coalesced = new CoalescedSync(held.sync);
    void coalesced.request();
    const waiting = [outcomeOf(coalesced.request()), outcomeOf(coalesced.request()), outcomeOf(coalesced.request())];
    held.finish();
    await settle();
    expect(held.started()).toBe(2);
    held.finish();
    await settle();
    expect(waiting.map((request) => request.state)).toEqual(["resolved", "resolved", "resolved"]);
    expect(held.started()).toBe(2);
  });

  it("makes a request made during the queued run wait for a run started after it in turn", async () => {
    const held = heldSync();
    const coalesced = new CoalescedSync(held.sync);
    void coalesced.request();
    const queued = outcomeOf(coalesced.request());
    held.finish();
    await settle();
    expect(held.started()).toBe(2); // the queued run is in flight now
    const later = outcomeOf(coalesced.request());
    await settle();
    expect(held.inFlight()).toBe(1);
    held.finish();
    await settle();
    expect(queued.state).toBe("resolved");
    expect(later.state).toBe("pending");
    expect(held.started()).toBe(3);
    held.finish();
    await settle();
    expect(later.state).toBe("resolved");
  });
});

describe("CoalescedSync: failures", () => {
  it("rejects a request with the error of the failed run that served it", async () => {
    const held = heldSync();
    const coalesced = new CoalescedSync(held.sync);
    const request = outcomeOf(coalesced.request());
    const error = new Error("EIO");
    held.fail(error);
    await settle();
    expect(request).toEqual({ state: "rejected", error });
  });

  it("rejects every request that shared a failed queued run, and none served by the run before it", async () => {
    const held = heldSync();
    const coalesced = new CoalescedSync(held.sync);
    const first = outcomeOf(coalesced.request());
    const shared = [outcomeOf(coalesced.request()), outcomeOf(coalesced.request())];
    held.finish();
    await settle();
    const error = new Error("EIO");
    held.fail(error);
    await settle();
    expect(first.state).toBe("resolved");
    expect(shared).toEqual([
      { state: "rejected", error },
      { state: "rejected", error },
    ]);
  });

  it("still runs the sync for the requests queued behind a failed run, and resolves them", async () => {
    const held = heldSync();
    const coalesced = new CoalescedSync(held.sync);
    const first = outcomeOf(coalesced.request());
    const queued = outcomeOf(coalesced.request());
    held.fail(new Error("EIO"));
    await settle();
    expect(first.state).toBe("rejected");
    expect(held.started()).toBe(2);
    expect(queued.state).toBe("pending");
    held.finish();
    await settle();
    expect(queued.state).toBe("resolved");
  });

  it("starts a new run for the next request after a failed run, which resolves when it succeeds", async () => {
    const held = heldSync();
    const coalesced = new CoalescedSync(held.sync);
    void outcomeOf(coalesced.request());
    held.fail(new Error("EIO"));
    await settle();
    const next = outcomeOf(coalesced.request());
    expect(held.started()).toBe(2);
    held.finish();
    await settle();
    expect(next.state).toBe("resolved");
  });
});

describe("CoalescedSync.busy", () => {
  it("is false before any request", () => {
    const held = heldSync();
    expect(new CoalescedSync(held.sync).busy).toBe(false);
    expect(held.started()).toBe(0);
  });

  it("is true from a request until the last queued run has finished, then false", async () => {
    const held = heldSync();
    const coalesced = new CoalescedSync(held.sync);
    void coalesced.request();
    expect(coalesced.busy).toBe(true);
    void coalesced.request();
    held.finish();
    await settle();
    expect(coalesced.busy).toBe(true); // the queued run is in flight
    held.finish();
    await settle();
    expect(coalesced.busy).toBe(false);
  });

  it("is false after a failed run with nothing queued", async () => {
    const held = heldSync();
    const coalesced = new CoalescedSync(held.sync);
    void outcomeOf(coalesced.request());
    held.fail(new Error("EIO"));
    await settle();
    expect(coalesced.busy).toBe(false);
  });
});
