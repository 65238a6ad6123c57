// The store wrapper `agentd serve` uses with telemetry on must not change what a
// store does: the whole conformance suite runs through it, and it keeps the store's
// capabilities (optional methods present or absent as on the store itself).
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { DataPointType } from "@opentelemetry/sdk-metrics";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { traceSessionStore } from "../../src/runtime/telemetry/traced-store.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { isSnapshotSubscriber, type SessionStore } from "../../stores/snapshot-store.js";
import { runStoreConformance } from "../stores/conformance.js";
import type { CounterState } from "../stores/snapshot-factory.js";
import { registerInProcessTelemetry, type InProcessTelemetry } from "./in-process-telemetry.js";

runStoreConformance(
  "memory, traced",
  async () => {
    const store = new InMemorySessionStore<CounterState>();
    return {
      store: traceSessionStore(store, "memory"),
      openResources: () => store.subscriberCount + store.chunkWatcherCount,
      footprint: async () => store.sizes(),
    };
  },
  { keepsToolJournal: true },
);

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

describe("traceSessionStore's spans and durations", () => {
  /** Every operation the wrapper traces (lifecycle calls and subscriptions are not). */
  const TRACED = [
    "getHead",
    "commit",
    "getRecord",
    "getChain",
    "listRecords",
    "updateRecord",
    "listHeads",
    "deleteSession",
    "sweepExpired",
  ];
  /** Not traced: lifecycle calls and the long-lived subscription. */
  const UNTRACED = ["ready", "ping", "close", "subscribeStatus"];

  let telemetry: InProcessTelemetry;
  beforeEach(() => {
    telemetry = registerInProcessTelemetry();
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await telemetry.stop();
  });

  /** A store whose every method (traced or not) records its name and resolves at once. */
  function recordingStore(calls: string[] = []): Record<string, () => Promise<undefined>> {
    return Object.fromEntries(
      [...TRACED, ...UNTRACED].map((name) => [
        name,
        async () => {
          calls.push(name);
          return undefined;
        },
      ]),
    );
  }

  /** The wrapper, called by method name. */
  function traced(store: Record<string, () => Promise<unknown>>, storeName: string) {
    return traceSessionStore(store as unknown as SessionStore, storeName) as unknown as Record<
      string,
      () => Promise<unknown>
    >;
  }

  it("runs each store operation in an internal span `agentd.store <operation>` naming the store and the operation", async () => {
    const calls: string[] = [];
    const store = traced(recordingStore(calls), "custom");
    for (const name of TRACED) await store[name]!();
    expect(calls).toEqual(TRACED);
    expect(telemetry.spans().map((s) => [s.name, s.kind, s.attributes])).toEqual(
      TRACED.map((name) => [
        `agentd.store ${name}`,
        SpanKind.INTERNAL,
        { "agentd.store": "custom", "agentd.store.operation": name },
      ]),
    );
  });

  it("gives no span and no duration to lifecycle calls and subscriptions", async () => {
    const calls: string[] = [];
    const store = traced(recordingStore(calls), "custom");
    for (const name of UNTRACED) await store[name]!();
    expect(calls).toEqual(UNTRACED);
    expect(telemetry.spans()).toEqual([]);
    expect((await telemetry.metrics()).map((m) => m.descriptor.name)).not.toContain("agentd.store.operation.duration");
  });

  it("records each operation's duration, in seconds, in agentd.store.operation.duration by store and operation", async () => {
    let now = 5_000;
    vi.spyOn(performance, "now").mockImplementation(() => now);
    const store = traced(
      {
        getHead: async () => {
          now += 250; // the operation takes 250 ms
          return undefined;
        },
      },
      "memory",
    );
    await store.getHead!();
    const duration = await telemetry.metric("agentd.store.operation.duration");
    if (duration.dataPointType !== DataPointType.HISTOGRAM) throw new Error("not a histogram");
    expect(duration.dataPoints.map((p) => [p.attributes, p.value.count, p.value.sum])).toEqual([
      [{ "agentd.store": "memory", "agentd.store.operation": "getHead" }, 1, 0.25],
    ]);
  });

  it("fails the span of a failed operation, and still records its duration", async () => {
    const store = traced(
      {
        commit: async () => {
          throw new AgentError("UNAVAILABLE", "store is down");
        },
      },
      "mongodb",
    );
    await expect(store.commit!()).rejects.toThrow("store is down");
    const [span] = telemetry.spans();
    expect(span!.name).toBe("agentd.store commit");
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: "store is down" });
    const duration = await telemetry.metric("agentd.store.operation.duration");
    expect(duration.dataPoints.map((p) => p.attributes)).toEqual([
      { "agentd.store": "mongodb", "agentd.store.operation": "commit" },
    ]);
  });
});
