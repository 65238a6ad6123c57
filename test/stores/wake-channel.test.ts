import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { isChunkLog } from "../../stores/chunk-log.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { WakeChannel } from "../../stores/wake-channel.js";

// The iterable behind every store's watchChunks: how it ends (abort, close, fail, the consumer's
// return), that it releases what it holds exactly once, and that nothing revives it once ended.

/** A channel on a fresh signal, counting its onClose calls. */
function channel(): { channel: WakeChannel; controller: AbortController; closes: () => number } {
  const controller = new AbortController();
  let closes = 0;
  const made = new WakeChannel(controller.signal, () => closes++);
  return { channel: made, controller, closes: () => closes };
}

/** Iterates `iterable` to its end; resolves to how many wake-ups it yielded (rejects with what it threw). */
async function drain(iterable: AsyncIterable<void>): Promise<number> {
  let n = 0;
  for await (const _wake of iterable) n++;
  return n;
}

describe("WakeChannel", () => {
  it("runs onClose once however many times it is closed", () => {
    const { channel: c, controller, closes } = channel();
    c.close();
    c.close();
    controller.abort();
    expect(closes()).toBe(1);
  });

  it("removes its abort listener from the signal when closed", () => {
    const { channel: c, controller } = channel();
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    c.close();
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("ends without an error when failed after it was closed", async () => {
    const { channel: c } = channel();
    c.close();
    c.fail(new AgentError("FAILED_PRECONDITION", "too late"));
    expect(await drain(c)).toBe(0);
  });

  it("ends without an error when failed after its signal aborted", async () => {
    const { channel: c, controller } = channel();
    controller.abort();
    c.fail(new AgentError("FAILED_PRECONDITION", "too late"));
    expect(await drain(c)).toBe(0);
  });

  it("throws the failure to a consumer that was waiting", async () => {
    const { channel: c } = channel();
    const drained = drain(c);
    c.fail(new AgentError("FAILED_PRECONDITION", "no change streams"));
    await expect(drained).rejects.toMatchObject({ status: "FAILED_PRECONDITION", message: "no change streams" });
  });

  it("closes (running onClose) when the consumer stops iterating", async () => {
    const { channel: c, closes } = channel();
    c.wake();
    for await (const _wake of c) break;
    expect(c.isClosed).toBe(true);
    expect(closes()).toBe(1);
  });

  it("coalesces wake-ups the consumer has not taken into one", async () => {
    const open = channel().channel;
    const iterator = open[Symbol.asyncIterator]();
    open.wake();
    open.wake();
    expect(await iterator.next()).toEqual({ value: undefined, done: false });
    const next = iterator.next();
    open.close();
    expect(await next).toEqual({ value: undefined, done: true });
  });
});

describe("isChunkLog", () => {
  const store = (methods: Record<string, unknown>): SessionStore<unknown> =>
    methods as unknown as SessionStore<unknown>;

  it("is false for a store with appendChunks but no watchChunks", () => {
    expect(isChunkLog(store({ appendChunks: () => undefined }))).toBe(false);
  });

  it("is false for a store with watchChunks but no appendChunks", () => {
    expect(isChunkLog(store({ watchChunks: () => undefined }))).toBe(false);
  });

  it("is true for a store with both, and false for no store", () => {
    expect(isChunkLog(store({ appendChunks: () => undefined, watchChunks: () => undefined }))).toBe(true);
    expect(isChunkLog(undefined)).toBe(false);
  });
});
