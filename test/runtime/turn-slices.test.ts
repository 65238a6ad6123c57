import { describe, expect, it } from "vitest";
import { TurnSlices, type TurnSliceClock } from "../../src/runtime/sessions/turn-slices.js";

/** Runs every microtask queued so far (and those they queue): a real later turn of the event loop. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A clock the test moves by hand, and an event loop the test turns by hand:
 * `later` callbacks wait for {@link ManualLoop.turn}, which runs the ones
 * queued before it began, each followed by the microtasks it caused, as
 * Node.js runs its check phase.
 */
class ManualLoop implements TurnSliceClock {
  time = 0;
  private queue: (() => void)[] = [];

  now(): number {
    return this.time;
  }

  later(fn: () => void): void {
    this.queue.push(fn);
  }

  /** Runs only the first callback queued (and its microtasks). */
  async step(): Promise<void> {
    this.queue.shift()?.();
    await settle();
  }

  async turn(): Promise<void> {
    const callbacks = this.queue;
    this.queue = [];
    for (const fn of callbacks) {
      fn();
      await settle();
    }
  }
}

/** Admits a turn called `name` of `tenant` that takes `ms` of the manual clock once it starts; `started` records the order. */
function startTurn(
  slices: TurnSlices,
  loop: ManualLoop,
  started: string[],
  name: string,
  ms: number,
  tenant = "",
): void {
  const run = (): void => {
    started.push(name);
    loop.time += ms;
  };
  const admitted = slices.line(tenant).admit();
  if (admitted) void admitted.then(run);
  else run();
}

/** Slices of 4 ms on a {@link ManualLoop}; `start(name, ms)` asks for a turn that takes `ms` once started. */
function fourMsSlices(): {
  loop: ManualLoop;
  slices: TurnSlices;
  started: string[];
  start: (name: string, ms: number, tenant?: string) => void;
} {
  const loop = new ManualLoop();
  const slices = new TurnSlices(4, loop);
  const started: string[] = [];
  return { loop, slices, started, start: (name, ms, tenant) => startTurn(slices, loop, started, name, ms, tenant) };
}

describe("TurnSlices", () => {
  it("admits a turn on an idle server at once, with nothing to await", () => {
    const slices = new TurnSlices(4, new ManualLoop());
    expect(slices.admit()).toBeUndefined();
  });

  it("admits turns at once while the slice is younger than its length", () => {
    const loop = new ManualLoop();
    const slices = new TurnSlices(4, loop);
    expect(slices.admit()).toBeUndefined();
    loop.time = 3.9;
    expect(slices.admit()).toBeUndefined();
  });

  it("makes a turn that asks after the slice's length wait for a later turn of the event loop", async () => {
    const { loop, slices, started, start } = fourMsSlices();
    start("a", 4);
    start("b", 1);
    await settle();
    expect(started).toEqual(["a"]);
    expect(slices.queued).toBe(1);
    await loop.turn();
    expect(started).toEqual(["a", "b"]);
    expect(slices.queued).toBe(0);
  });

  it("admits waiting turns in the order they asked, one slice's worth per turn of the event loop", async () => {
    const { loop, started, start } = fourMsSlices();
    for (const name of ["a", "b", "c", "d", "e", "f", "g"]) start(name, 2);
    await settle();
    expect(started).toEqual(["a", "b"]); // 0 + 2 + 2: the slice's 4 ms are spent
    await loop.turn();
    expect(started).toEqual(["a", "b", "c", "d"]);
    await loop.turn();
    expect(started).toEqual(["a", "b", "c", "d", "e", "f"]);
    await loop.turn();
    expect(started).toEqual(["a", "b", "c", "d", "e", "f", "g"]);
  });

  it("serves the tenants waiting in turn, one start each, first come first served within a tenant", async () => {
    const { loop, started, start } = fourMsSlices();
    for (const name of ["a1", "a2", "a3", "a4"]) start(name, 4, "a"); // a1 spends the slice: the rest wait
    for (const name of ["b1", "b2"]) start(name, 4, "b");
    start("c1", 4, "c");
    await settle();
    expect(started).toEqual(["a1"]);
    for (let turn = 0; turn < 6; turn++) await loop.turn();
    expect(started).toEqual(["a1", "a2", "b1", "c1", "a3", "b2", "a4"]);
  });

  it("puts a turn that asks while others wait behind them, also when a new slice could admit it", async () => {
    const { loop, slices, started, start } = fourMsSlices();
    start("a", 4);
    start("b", 0);
    await loop.step(); // the event loop's next turn begins: the slice closes, b still waits for its admission
    expect(slices.queued).toBe(1);
    start("c", 0); // no slice is open: c alone would start now
    await settle();
    expect(started).toEqual(["a"]);
    await loop.turn();
    expect(started).toEqual(["a", "b", "c"]);
  });

  it("serves a callback that waited for the event loop between two slices of a burst (real clock)", async () => {
    const slices = new TurnSlices(0); // every slice admits one turn
    const order: string[] = [];
    const waits = ["a", "b", "c"].map((name) => {
      const admitted = slices.admit();
      return admitted ? admitted.then(() => order.push(name)) : order.push(name);
    });
    setImmediate(() => order.push("I/O"));
    await Promise.all(waits);
    expect(order.indexOf("a")).toBe(0);
    expect(order.indexOf("I/O")).toBeGreaterThan(0);
    expect(order.indexOf("I/O")).toBeLessThan(order.indexOf("c"));
    expect(order.filter((name) => name !== "I/O")).toEqual(["a", "b", "c"]);
  });
});
