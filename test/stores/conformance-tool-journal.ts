import { describe, expect, it } from "vitest";
import type { SessionStore } from "../../stores/snapshot-store.js";
import {
  hasToolResultJournal,
  MAX_JOURNALED_CALLS,
  MAX_JOURNALED_OUTPUT_BYTES,
  type JournaledToolCall,
  type ToolResultJournal,
} from "../../stores/tool-result-journal.js";
import { expectAgentError } from "../harness/agent-error-expectations.js";
import type { StoreUnderTest } from "./conformance.js";
import { checkpointRecord, commitRecord, type CounterState } from "./snapshot-factory.js";

type JournalStore = SessionStore<CounterState> & ToolResultJournal;

/** The store under test as a tool-call journal; a store registered with `keepsToolJournal` must implement it. */
async function journalStore(fresh: () => Promise<StoreUnderTest>): Promise<StoreUnderTest & { store: JournalStore }> {
  const t = await fresh();
  if (!hasToolResultJournal(t.store))
    throw new Error(
      "the store does not implement ToolResultJournal (recordToolCall, journaledToolCalls, dropToolCalls)",
    );
  return t as StoreUnderTest & { store: JournalStore };
}

const scope = (requestId = "req-1", sessionId = "s1") => ({ sessionId, requestId });
const started = (key: string, tool = "charge"): JournaledToolCall => ({ key, tool, startedAt: 1_000 });
const result = (key: string, output: unknown, tool = "charge"): JournaledToolCall => ({
  key,
  tool,
  startedAt: 1_000,
  endedAt: 2_000,
  output,
});

const byKey = (calls: JournaledToolCall[]) => [...calls].sort((a, b) => (a.key < b.key ? -1 : 1));

/** The per-turn journal of tool calls that lets a client's retry of an uncommitted turn replay them (`ToolResultJournal`). */
export function describeToolJournal(fresh: () => Promise<StoreUnderTest>): void {
  describe("tool-call journal", () => {
    it("returns a recorded result, with its output as JSON, to a later read", async () => {
      const { store } = await journalStore(fresh);
      await store.recordToolCall(scope(), result("k1", { charged: 42, receipt: ["a", { b: null }] }));
      expect(await store.journaledToolCalls(scope())).toEqual([
        {
          key: "k1",
          tool: "charge",
          startedAt: 1_000,
          endedAt: 2_000,
          output: { charged: 42, receipt: ["a", { b: null }] },
        },
      ]);
    });

    it("keeps each call of a turn under its own key", async () => {
      const { store } = await journalStore(fresh);
      await store.recordToolCall(scope(), result("k1", 1));
      await store.recordToolCall(scope(), result("k2", "two", "search"));
      await store.recordToolCall(scope(), started("k3", "transfer"));
      expect(byKey(await store.journaledToolCalls(scope()))).toEqual([
        { key: "k1", tool: "charge", startedAt: 1_000, endedAt: 2_000, output: 1 },
        { key: "k2", tool: "search", startedAt: 1_000, endedAt: 2_000, output: "two" },
        { key: "k3", tool: "transfer", startedAt: 1_000 },
      ]);
    });

    it("turns a journaled start into a result, and never a result back into a start", async () => {
      const { store } = await journalStore(fresh);
      await store.recordToolCall(scope(), started("k1"));
      await store.recordToolCall(scope(), result("k1", { ok: true }));
      await store.recordToolCall(scope(), started("k1"));
      expect(await store.journaledToolCalls(scope())).toEqual([
        { key: "k1", tool: "charge", startedAt: 1_000, endedAt: 2_000, output: { ok: true } },
      ]);
    });

    it("finds a turn's calls only under its own session and request ID", async () => {
      const { store } = await journalStore(fresh);
      await store.recordToolCall(scope("req-1", "s1"), result("k1", 1));
      expect(await store.journaledToolCalls(scope("req-2", "s1"))).toEqual([]);
      expect(await store.journaledToolCalls(scope("req-1", "s2"))).toEqual([]);
    });

    it("drops one turn's journal and keeps the others", async () => {
      const { store } = await journalStore(fresh);
      await store.recordToolCall(scope("req-1"), result("k1", 1));
      await store.recordToolCall(scope("req-2"), result("k2", 2));
      await store.dropToolCalls(scope("req-1"));
      expect(await store.journaledToolCalls(scope("req-1"))).toEqual([]);
      expect(await store.journaledToolCalls(scope("req-2"))).toHaveLength(1);
    });

    it("goes with its session when the session is deleted, leaving nothing behind", async () => {
      const { store, footprint } = await journalStore(fresh);
      await store.getHead("s0"); // opens the store (MongoDB creates its collections) before the baseline
      const baseline = await footprint?.();
      await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
      await store.recordToolCall(scope("req-1", "s1"), result("k1", 1));
      await store.recordToolCall(scope("req-1", "s2"), result("k1", 1));
      expect(await store.deleteSession!("s1")).toBe(true);
      expect(await store.journaledToolCalls(scope("req-1", "s1"))).toEqual([]);
      expect(await store.journaledToolCalls(scope("req-1", "s2"))).toHaveLength(1);
      await store.dropToolCalls(scope("req-1", "s2"));
      if (footprint) expect(await footprint()).toEqual(baseline);
    });

    it("refuses a call without a key with INVALID_ARGUMENT and stores nothing", async () => {
      const { store } = await journalStore(fresh);
      await expectAgentError(store.recordToolCall(scope(), result("", 1)), "INVALID_ARGUMENT", /key/);
      await expectAgentError(store.recordToolCall(scope(""), result("k1", 1)), "INVALID_ARGUMENT", /requestId/);
      expect(await store.journaledToolCalls(scope())).toEqual([]);
    });

    it("refuses a result over its size limit with RESOURCE_EXHAUSTED and stores nothing", async () => {
      const { store } = await journalStore(fresh);
      const big = "x".repeat(MAX_JOURNALED_OUTPUT_BYTES);
      await expectAgentError(store.recordToolCall(scope(), result("k1", big)), "RESOURCE_EXHAUSTED", /bytes/);
      expect(await store.journaledToolCalls(scope())).toEqual([]);
    });

    it("holds at most 1,000 calls per turn: a new call past them is RESOURCE_EXHAUSTED; a recorded call's result and other turns still go in", async () => {
      const { store } = await journalStore(fresh);
      const keys = Array.from({ length: MAX_JOURNALED_CALLS }, (_, i) => `k${i}`);
      for (let i = 0; i < keys.length; i += 100)
        await Promise.all(keys.slice(i, i + 100).map((key) => store.recordToolCall(scope(), started(key))));
      await expectAgentError(
        store.recordToolCall(scope(), started("one-more")),
        "RESOURCE_EXHAUSTED",
        `already journaled ${MAX_JOURNALED_CALLS} tool calls`,
      );
      await store.recordToolCall(scope(), result("k0", "done"));
      await store.recordToolCall(scope("req-2"), started("one-more"));
      const calls = await store.journaledToolCalls(scope());
      expect(calls).toHaveLength(MAX_JOURNALED_CALLS);
      expect(calls.find((c) => c.key === "k0")).toMatchObject({ endedAt: 2_000, output: "done" });
      expect(await store.journaledToolCalls(scope("req-2"))).toHaveLength(1);
    });

    it("refuses to read or drop a journal without a session or request ID with INVALID_ARGUMENT", async () => {
      const { store } = await journalStore(fresh);
      await expectAgentError(store.journaledToolCalls(scope("")), "INVALID_ARGUMENT", /requestId/);
      await expectAgentError(store.dropToolCalls(scope("req-1", "")), "INVALID_ARGUMENT", /sessionId/);
    });
  });
}
