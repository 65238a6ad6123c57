import { afterEach, describe, expect, it, vi } from "vitest";
import { DetachedChunks } from "../../src/runtime/background/detached-chunks.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { ledgerOnlyStore } from "../fixtures/ledger-only-store.js";

// The recorded stream of one detached invocation (src/runtime/background/detached-chunks.ts): what it appends
// to the store's chunk log, and how long it keeps it.

const RETENTION = 60_000;
const T = 1_700_000_000_000;
const key = { sessionId: "s1", snapshotId: "bg" };
const chunk = (sequence: number) => ({ sequence, modelChunk: { role: "model" as const, content: [{ text: "x" }] } });

afterEach(() => {
  vi.useRealTimers();
});

describe("DetachedChunks", () => {
  it("appends each chunk under its sequence, kept for the retention period from the append", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: T });
    const store = new InMemorySessionStore();
    const chunks = new DetachedChunks(store, Promise.resolve(key), RETENTION, undefined);
    expect(chunks.recording).toBe(true);
    await chunks.record(chunk(1));
    await chunks.record(chunk(2));
    expect((await store.readChunks(key, 0, 10)).map((c) => c.sequence)).toEqual([1, 2]);
    expect(await store.sweepChunks(T + RETENTION - 1)).toBe(0);
    expect(await store.sweepChunks(T + RETENTION + 1)).toBe(1);
  });

  it("keeps the log for the retention period from each keep (a heartbeat, the end of the work)", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: T });
    const store = new InMemorySessionStore();
    const chunks = new DetachedChunks(store, Promise.resolve(key), RETENTION, undefined);
    await chunks.record(chunk(1));
    vi.setSystemTime(T + 10 * RETENTION);
    await chunks.keep();
    expect(await store.sweepChunks(T + 10.5 * RETENTION)).toBe(0);
    expect(await store.sweepChunks(T + 11 * RETENTION + 1)).toBe(1);
  });

  it("records nothing, and keep resolves, when the pending row was never written", async () => {
    const store = new InMemorySessionStore();
    const chunks = new DetachedChunks(store, Promise.reject(new Error("no row")), RETENTION, undefined);
    await new Promise((resolve) => setTimeout(resolve, 0)); // an unobserved rejection would fail the test run here
    await expect(chunks.keep()).resolves.toBeUndefined();
    expect(store.sizes().chunkLogs).toBe(0);
  });

  it("records nothing on a store without a chunk log", async () => {
    const memory = new InMemorySessionStore();
    const withoutLog = ledgerOnlyStore(memory);
    const chunks = new DetachedChunks(withoutLog, Promise.resolve(key), RETENTION, undefined);
    expect(chunks.recording).toBe(false);
    await chunks.record(chunk(1));
    await chunks.keep();
    expect(memory.sizes().chunkLogs).toBe(0);
  });
});
