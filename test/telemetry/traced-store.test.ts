// The store wrapper `agentd serve` uses with telemetry on must not change what a
// store does: the whole conformance suite runs through it, and it keeps the store's
// capabilities (optional methods present or absent as on the store itself).
import { describe, expect, it } from "vitest";
import { traceSessionStore } from "../../src/runtime/traced-store.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { isSnapshotSubscriber, type SessionStore } from "../../stores/snapshot-store.js";
import { runStoreConformance } from "../stores/conformance.js";
import type { CounterState } from "../stores/snapshot-factory.js";

runStoreConformance("memory, traced", async () => {
  const store = new InMemorySessionStore<CounterState>();
  return {
    store: traceSessionStore(store, "memory"),
    openResources: () => store.subscriberCount,
    footprint: async () => store.sizes(),
  };
});

describe("traceSessionStore", () => {
  it("keeps the store's optional methods, and lacks the ones it lacks", () => {
    const full = traceSessionStore(new InMemorySessionStore(), "memory");
    expect(isSnapshotSubscriber(full)).toBe(true);
    expect(typeof full.listHeads).toBe("function");
    const minimal: SessionStore = {
      getHead: async () => undefined,
      commit: async () => undefined,
      getRecord: async () => undefined,
      getChain: async () => undefined,
      listRecords: async () => ({ records: [] }),
      updateRecord: async () => null,
    };
    const traced = traceSessionStore(minimal, "custom");
    expect(isSnapshotSubscriber(traced)).toBe(false);
    expect("listHeads" in traced).toBe(false);
    expect(traced.ping).toBeUndefined();
  });

  it("runs every method on the store itself and passes failures through", async () => {
    const calledOn: unknown[] = [];
    class Strict extends InMemorySessionStore {
      override async getHead(sessionId: string) {
        calledOn.push(this);
        if (sessionId === "boom") throw new Error("boom");
        return super.getHead(sessionId);
      }
    }
    const inner = new Strict();
    const traced = traceSessionStore(inner, "memory");
    await expect(traced.getHead("nothing")).resolves.toBeUndefined();
    await expect(traced.getHead("boom")).rejects.toThrow("boom");
    expect(calledOn).toEqual([inner, inner]);
    expect(traced.getHead).toBe(traced.getHead); // one wrapper per method
  });
});
