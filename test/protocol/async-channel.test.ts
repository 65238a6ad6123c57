import { describe, expect, it } from "vitest";
import { AsyncChannel } from "../../src/protocol/async-channel.js";

async function drain<T>(channel: AsyncChannel<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of channel) items.push(item);
  return items;
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
});
