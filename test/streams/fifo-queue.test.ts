import { afterEach, describe, expect, it, vi } from "vitest";
import { FifoQueue } from "../../src/streams/fifo-queue.js";

describe("FifoQueue", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("takes items in the order they were pushed, across growth and wrap-around", () => {
    const queue = new FifoQueue<number>();
    const taken: number[] = [];
    let next = 0;
    // Interleaved pushes and shifts: the head wraps around the ring several times while it grows and shrinks.
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < round % 7; i++) queue.push(next++);
      for (let i = 0; i < 3 && queue.size > 0; i++) taken.push(queue.shift()!);
    }
    while (queue.size > 0) taken.push(queue.shift()!);
    expect(taken).toEqual(Array.from({ length: next }, (_, i) => i));
  });

  it("shift on an empty queue returns undefined", () => {
    const queue = new FifoQueue<string>();
    expect(queue.shift()).toBeUndefined();
    queue.push("a");
    queue.shift();
    expect(queue.shift()).toBeUndefined();
  });

  it("never moves the remaining items to take one: 100k items are drained without Array shift or splice", () => {
    const shift = vi.spyOn(Array.prototype, "shift");
    const splice = vi.spyOn(Array.prototype, "splice");
    const queue = new FifoQueue<number>();
    for (let i = 0; i < 100_000; i++) queue.push(i);
    let sum = 0;
    while (queue.size > 0) sum += queue.shift()!;
    expect(sum).toBe((100_000 * 99_999) / 2);
    expect(shift).not.toHaveBeenCalled();
    expect(splice).not.toHaveBeenCalled();
  });

  it("keeps its storage proportional to what waits: a million passes of a few items stay in 8 slots", () => {
    const queue = new FifoQueue<number>();
    for (let i = 0; i < 1_000_000; i++) {
      queue.push(i);
      if (queue.size > 5) queue.shift();
    }
    expect(queue.size).toBe(5);
    expect(queue.allocated).toBe(8);
  });

  it("gives its storage back once drained, and drops references to taken items", () => {
    const queue = new FifoQueue<object>();
    for (let i = 0; i < 10_000; i++) queue.push({ i });
    expect(queue.allocated).toBeGreaterThanOrEqual(10_000);
    while (queue.size > 1) queue.shift();
    expect(queue.allocated).toBeLessThanOrEqual(8);
    expect(queue.toArray()).toEqual([{ i: 9_999 }]);
  });

  it("toArray lists the waiting items head first, and clear drops them", () => {
    const queue = new FifoQueue<number>();
    for (let i = 0; i < 6; i++) queue.push(i);
    queue.shift();
    queue.shift();
    queue.push(6);
    expect(queue.toArray()).toEqual([2, 3, 4, 5, 6]);
    queue.clear();
    expect(queue.size).toBe(0);
    expect(queue.toArray()).toEqual([]);
  });
});
