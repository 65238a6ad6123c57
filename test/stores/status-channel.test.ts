import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { StatusChannel } from "../../stores/status-channel.js";
import type { SnapshotStatus } from "../../src/types/snapshot.js";

// The dedup gate and queue behind every store's subscribeStatus (stores/status-channel.ts).

/** Every status the channel delivers until it ends. */
async function drain(channel: StatusChannel): Promise<SnapshotStatus[]> {
  const seen: SnapshotStatus[] = [];
  for await (const status of channel) seen.push(status);
  return seen;
}

describe("StatusChannel", () => {
  it("delivers each status change once, in order, and drops older or repeated observations", async () => {
    const channel = new StatusChannel(new AbortController().signal, () => undefined);
    expect(channel.push({ status: "pending", version: 1 })).toBe(true);
    expect(channel.push({ status: "pending", version: 2 })).toBe(false); // same status, newer version
    expect(channel.push({ status: "completed", version: 2 })).toBe(false); // version not newer
    expect(channel.push({ status: "aborted", version: 3 })).toBe(true);
    expect(channel.push({ status: "aborted", version: 3 })).toBe(false);
    expect(channel.push({ status: "pending", version: 0 })).toBe(false);
    channel.close();
    expect(await drain(channel)).toEqual(["pending", "aborted"]);
  });

  it("compares versions strictly: an observation at the last version is dropped even with a new status", () => {
    const channel = new StatusChannel(new AbortController().signal, () => undefined);
    channel.push({ status: "pending", version: 5 });
    expect(channel.push({ status: "failed", version: 5 })).toBe(false);
    expect(channel.push({ status: "failed", version: 6 })).toBe(true);
  });

  it("wakes a waiting consumer when a status arrives", async () => {
    const channel = new StatusChannel(new AbortController().signal, () => undefined);
    const iterator = channel[Symbol.asyncIterator]();
    const next = iterator.next();
    channel.push({ status: "completed", version: 1 });
    expect(await next).toEqual({ value: "completed", done: false });
  });

  it("ends when its signal aborts, calling onClose once and refusing later observations", async () => {
    const controller = new AbortController();
    let closes = 0;
    const channel = new StatusChannel(controller.signal, () => closes++);
    const delivered = drain(channel);
    controller.abort();
    expect(await delivered).toEqual([]);
    expect(channel.isClosed).toBe(true);
    expect(closes).toBe(1);
    expect(channel.push({ status: "completed", version: 9 })).toBe(false);
  });

  it("starts closed, without calling onClose, when its signal has already aborted", async () => {
    let closes = 0;
    const channel = new StatusChannel(AbortSignal.abort(), () => closes++);
    expect(channel.isClosed).toBe(true);
    expect(closes).toBe(0);
    expect(channel.push({ status: "pending", version: 1 })).toBe(false);
  });

  it("closes once however often it is closed, and stops listening to its signal", () => {
    const controller = new AbortController();
    let closes = 0;
    const channel = new StatusChannel(controller.signal, () => closes++);
    channel.close();
    channel.close();
    controller.abort();
    expect(closes).toBe(1);
  });

  it("removes its abort listener when closed, so a long-lived signal keeps no closed channel", () => {
    const controller = new AbortController();
    const channel = new StatusChannel(controller.signal, () => undefined);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    channel.close();
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("closes when the consumer stops iterating", async () => {
    let closes = 0;
    const channel = new StatusChannel(new AbortController().signal, () => closes++);
    channel.push({ status: "pending", version: 1 });
    channel.push({ status: "completed", version: 2 });
    for await (const status of channel) {
      expect(status).toBe("pending");
      break;
    }
    expect(channel.isClosed).toBe(true);
    expect(closes).toBe(1);
  });
});
