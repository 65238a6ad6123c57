import { describe, expect, it } from "vitest";
import { AsyncChannel } from "../../src/streams/async-channel.js";

async function drain<T>(channel: AsyncChannel<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of channel) items.push(item);
  return items;
}

/** Settles like `promise` if it settles once the pending microtasks have run; rejects with "still pending" otherwise. */
function settledNow<T>(promise: Promise<T>): Promise<T> {
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("still pending")), 0));
  return Promise.race([promise, timeout]);
}

describe("AsyncChannel", () => {
  it("accepts items while open", () => {
    const channel = new AsyncChannel<number>();
    expect(channel.push(1)).toBe(true);
    expect(channel.size).toBe(1);
  });

  it("refuses and drops items after close", async () => {
    const channel = new AsyncChannel<number>();
    channel.push(1);
    channel.close();
    expect(channel.push(2)).toBe(false);
    expect(channel.size).toBe(1);
    expect(await drain(channel)).toEqual([1]);
  });

  it("delivers queued items before the failure", async () => {
    const channel = new AsyncChannel<number>();
    channel.push(1);
    channel.fail(new Error("boom"));
    const items: number[] = [];
    await expect(
      (async () => {
        for await (const item of channel) items.push(item);
      })(),
    ).rejects.toThrow("boom");
    expect(items).toEqual([1]);
  });

  it("ignores fail after close: iteration ends normally", async () => {
    const channel = new AsyncChannel<number>();
    channel.push(1);
    channel.close();
    channel.fail(new Error("too late"));
    expect(await drain(channel)).toEqual([1]);
  });

  it("wakes a waiting consumer when an item arrives", async () => {
    const channel = new AsyncChannel<string>();
    const drained = drain(channel);
    channel.push("a");
    channel.close();
    expect(await drained).toEqual(["a"]);
  });

  it("next() resolves with a queued item without waiting for a push, in push order", async () => {
    const channel = new AsyncChannel<number>();
    channel.push(1);
    channel.push(2);
    channel.push(3);
    const iterator = channel[Symbol.asyncIterator]();
    expect(await settledNow(iterator.next())).toStrictEqual({ done: false, value: 1 });
    expect(await settledNow(iterator.next())).toStrictEqual({ done: false, value: 2 });
    expect(await settledNow(iterator.next())).toStrictEqual({ done: false, value: 3 });
  });

  it("reports done on next() after the failure was thrown once", async () => {
    const channel = new AsyncChannel<number>();
    const boom = new Error("boom");
    channel.fail(boom);
    const iterator = channel[Symbol.asyncIterator]();
    await expect(iterator.next()).rejects.toBe(boom);
    expect(await iterator.next()).toStrictEqual({ done: true, value: undefined });
    expect(await iterator.next()).toStrictEqual({ done: true, value: undefined });
  });

  it("return() ends the iteration though items are still queued, and size still counts them", async () => {
    const channel = new AsyncChannel<number>();
    channel.push(1);
    channel.push(2);
    channel.push(3);
    const iterator = channel[Symbol.asyncIterator]();
    await iterator.next();
    expect(await iterator.return?.()).toStrictEqual({ done: true, value: undefined });
    expect(await iterator.next()).toStrictEqual({ done: true, value: undefined });
    expect(channel.size).toBe(2);
    expect(channel.queued()).toStrictEqual([2, 3]);
  });

  it("throw(err) rejects with err and ends the iteration", async () => {
    const channel = new AsyncChannel<number>();
    channel.push(1);
    const iterator = channel[Symbol.asyncIterator]();
    const boom = new Error("boom");
    await expect(iterator.throw?.(boom)).rejects.toBe(boom);
    expect(await iterator.next()).toStrictEqual({ done: true, value: undefined });
  });

  it("wakes a consumer waiting in next() with done on close()", async () => {
    const channel = new AsyncChannel<number>();
    const next = channel[Symbol.asyncIterator]().next();
    await expect(settledNow(next)).rejects.toThrow("still pending");
    channel.close();
    expect(await settledNow(next)).toStrictEqual({ done: true, value: undefined });
  });

  it("wakes a consumer waiting in next() with the rejection on fail(err)", async () => {
    const channel = new AsyncChannel<number>();
    const next = channel[Symbol.asyncIterator]().next();
    await expect(settledNow(next)).rejects.toThrow("still pending");
    const boom = new Error("boom");
    channel.fail(boom);
    await expect(settledNow(next)).rejects.toBe(boom);
  });

  it("has room without a promise below its capacity, and without a capacity at all", () => {
    const bounded = new AsyncChannel<number>({ capacity: 3 });
    bounded.push(1);
    bounded.push(2);
    expect(bounded.whenWritable()).toBeUndefined();
    const unbounded = new AsyncChannel<number>();
    for (let i = 0; i < 10_000; i++) unbounded.push(i);
    expect(unbounded.whenWritable()).toBeUndefined();
  });

  it("a full channel's writer waits until the reader took half of the items, then resumes", async () => {
    const channel = new AsyncChannel<number>({ capacity: 4 });
    for (let i = 0; i < 4; i++) channel.push(i);
    const room = channel.whenWritable();
    expect(room).toBeInstanceOf(Promise);
    const iterator = channel[Symbol.asyncIterator]();
    await iterator.next();
    await expect(settledNow(room!)).rejects.toThrow("still pending"); // 3 still queued
    await iterator.next();
    await expect(settledNow(room!)).resolves.toBeUndefined(); // 2 queued: half the capacity
    expect(channel.whenWritable()).toBeUndefined();
  });

  it("releases a waiting writer in a later event-loop turn, not in the reader's microtask", async () => {
    const channel = new AsyncChannel<number>({ capacity: 2 });
    channel.push(1);
    channel.push(2);
    let released = false;
    void channel.whenWritable()!.then(() => (released = true));
    const iterator = channel[Symbol.asyncIterator]();
    await iterator.next();
    await iterator.next();
    await Promise.resolve();
    expect(released).toBe(false);
    await new Promise((resolve) => setImmediate(resolve));
    expect(released).toBe(true);
  });

  it("releases a waiting writer when the channel closes or fails", async () => {
    const closed = new AsyncChannel<number>({ capacity: 1 });
    closed.push(1);
    const closedRoom = closed.whenWritable()!;
    closed.close();
    await expect(closedRoom).resolves.toBeUndefined();
    const failed = new AsyncChannel<number>({ capacity: 1 });
    failed.push(1);
    const failedRoom = failed.whenWritable()!;
    failed.fail(new Error("boom"));
    await expect(failedRoom).resolves.toBeUndefined();
  });

  it("releases a waiting writer, and stops making writers wait, once the reader left (return)", async () => {
    const channel = new AsyncChannel<number>({ capacity: 1 });
    channel.push(1);
    const room = channel.whenWritable()!;
    await channel[Symbol.asyncIterator]().return!();
    await expect(room).resolves.toBeUndefined();
    channel.push(2);
    expect(channel.whenWritable()).toBeUndefined();
  });

  it("delivers 200k items in push order through a bounded buffer with a writer that waits for room, never past capacity", async () => {
    const channel = new AsyncChannel<number>({ capacity: 1024 });
    const reading = drain(channel);
    let largest = 0;
    for (let i = 0; i < 200_000; i++) {
      channel.push(i);
      largest = Math.max(largest, channel.size);
      const room = channel.whenWritable();
      if (room) await room;
    }
    channel.close();
    const items = await reading;
    expect(largest).toBe(1024);
    expect(items.length).toBe(200_000);
    expect(items.every((item, i) => item === i)).toBe(true);
  });
});
