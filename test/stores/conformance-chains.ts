import { describe, expect, it } from "vitest";
import type { Artifact, Message } from "../../src/types/content.js";
import { userText } from "../../src/types/content.js";
import type { SessionState } from "../../src/types/session-state.js";
import type { CheckpointPolicy } from "../../stores/ledger/checkpoint-policy.js";
import { deepFreeze } from "../../stores/ledger/frozen-value.js";
import { stateOfChain } from "../../stores/ledger/state-chain.js";
import type { StoreUnderTest } from "./conformance.js";
import { frozenMessage, RuntimeSession, turnRecord } from "./ledger-fixtures.js";
import {
  checkpointRecord,
  commitRecord,
  ids,
  pendingRecord,
  readState,
  T0,
  type CounterRecord,
  type CounterState,
} from "./snapshot-factory.js";

type State = SessionState<CounterState>;

/** Runs `task` over `items` with at most `limit` in flight. */
async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        await task(items[i]!, i);
      }
    }),
  );
}

/** getChain and state: every turn's exact state rebuilt from checkpoint..target chains, placed where the checkpoint policy says. */
export function describeChains(fresh: () => Promise<StoreUnderTest>): void {
  describe("chains and state", () => {
    it(
      "reconstructs the exact state of every turn of a 1,000-turn session from checkpoints and deltas",
      { timeout: 120_000 },
      async () => {
        const { store } = await fresh();
        const policy: CheckpointPolicy = { minDeltaBytes: 2048, ratio: 1, maxDepth: 50 };
        let clock = T0;
        const runtime = new RuntimeSession(store, "long", policy, () => clock++);
        const records: CounterRecord[] = [];
        const expected: State[] = [];
        let custom: CounterState | undefined = { n: 0, items: [] };
        let messages: Message[] = [frozenMessage("turn 0")];
        let artifacts: Artifact[] = [];
        for (let t = 0; t < 1000; t++) {
          if (t > 0) {
            // Messages: one user + one model message per turn; now and then the history is rewritten
            // (setMessages-style: truncated, or compacted into a summary plus the recent tail).
            if (t % 100 === 50) messages = [frozenMessage(`summary before ${t}`), ...messages.slice(-10)];
            else if (t % 37 === 0) messages = messages.slice(0, Math.max(0, messages.length - 3));
            messages = [
              ...messages,
              frozenMessage(`user ${t}`),
              deepFreeze<Message>({ role: "model", content: [{ text: `model ${t}` }] }),
            ];
            // Custom state: changes every turn; removed now and then, then recreated (a root replace).
            if (t % 53 === 0) custom = undefined;
            else if (custom === undefined) custom = { n: t, items: [`fresh ${t}`] };
            else custom = { n: t, items: [...(custom.items ?? []), `item ${t}`].slice(-8) };
            // Artifacts: a named one replaced by name, an unnamed one appended, a reset now and then.
            if (t % 97 === 0)
              artifacts = [deepFreeze<Artifact>({ name: `report-${t % 4}`, parts: [{ text: `reset ${t}` }] })];
            else if (t % 89 === 0) artifacts = [...artifacts].reverse();
            else {
              if (t % 3 === 0) {
                const named = deepFreeze<Artifact>({ name: `report-${t % 4}`, parts: [{ text: `report at ${t}` }] });
                const at = artifacts.findIndex((a) => a.name === named.name);
                artifacts = at >= 0 ? artifacts.map((a, i) => (i === at ? named : a)) : [...artifacts, named];
              }
              if (t % 5 === 0) artifacts = [...artifacts, deepFreeze<Artifact>({ parts: [{ text: `note ${t}` }] })];
            }
          }
          const next: State = { sessionId: "long", messages, artifacts, ...(custom === undefined ? {} : { custom }) };
          expected.push(structuredClone(next));
          records.push(await runtime.commit(`long-${String(t).padStart(4, "0")}`, next));
        }
        // The scenario exercises what it claims to.
        const checkpoints = records.filter((r) => r.checkpoint);
        expect(checkpoints.length).toBeGreaterThanOrEqual(10);
        expect(Math.max(...records.map((r) => r.depth))).toBeGreaterThanOrEqual(10);
        expect(records.some((r) => r.delta?.customRemoved)).toBe(true);
        expect(records.some((r) => r.delta?.customPatch?.some((op) => op.path === ""))).toBe(true);
        expect(records.some((r) => r.delta?.artifactsReset)).toBe(true);
        expect(records.some((r, t) => r.delta && r.delta.keepMessages < expected[t - 1]!.messages.length)).toBe(true);

        expect(await store.getHead("long")).toMatchObject({
          headSnapshotId: "long-0999",
          turnCount: 1000,
          version: 1000,
        });
        await forEachLimited(records, 8, async (record, t) => {
          const chain = await store.getChain(record.snapshotId);
          expect(chain, `chain of turn ${t}`).toBeDefined();
          expect(chain!.length, `chain length of turn ${t}`).toBe(record.depth + 1);
          expect(chain![0]!.checkpoint, `chain start of turn ${t}`).toBeDefined();
          expect(chain![chain!.length - 1], `record of turn ${t}`).toEqual(record);
          expect(stateOfChain(chain!), `state of turn ${t}`).toEqual(expected[t]);
        });
      },
    );

    it("stores checkpoints where the policy puts them and returns exactly checkpoint..target as a chain", async () => {
      const { store } = await fresh();
      let clock = T0;
      const runtime = new RuntimeSession(store, "cp", { minDeltaBytes: 1, ratio: 1, maxDepth: 3 }, () => clock++);
      const states: State[] = [];
      let state: State = {
        sessionId: "cp",
        messages: [frozenMessage("x".repeat(2000))],
        artifacts: [],
        custom: { n: 0 },
      };
      for (let t = 0; t < 12; t++) {
        // Small deltas (so only maxDepth forces a checkpoint), except turn 7's, which outgrows the last checkpoint.
        if (t > 0)
          state = {
            ...state,
            messages: [...state.messages, frozenMessage(t === 7 ? "y".repeat(5000) : `m${t}`)],
            custom: { n: t },
          };
        states.push(structuredClone(state));
        await runtime.commit(`cp-${String(t).padStart(2, "0")}`, state);
      }
      const stored = await Promise.all(states.map((_, t) => store.getRecord(`cp-${String(t).padStart(2, "0")}`)));
      expect(stored.map((r) => r!.depth)).toEqual([0, 1, 2, 0, 1, 2, 0, 0, 1, 2, 0, 1]);
      expect(stored.filter((r) => r!.checkpoint).map((r) => r!.turnIndex)).toEqual([0, 3, 6, 7, 10]);
      expect(stored.filter((r) => r!.delta).map((r) => r!.turnIndex)).toEqual([1, 2, 4, 5, 8, 9, 11]);
      for (let t = 0; t < 12; t++) {
        const target = stored[t]!;
        const chain = (await store.getChain(target.snapshotId))!;
        const expectedIds = stored.slice(target.checkpointTurn, t + 1).map((r) => r!.snapshotId);
        expect(chain.length).toBe(target.depth + 1);
        expect(ids(chain)).toEqual(expectedIds);
        expect(chain[0]!.checkpoint).toBeDefined();
        expect(chain.slice(1).every((r) => r.delta && !r.checkpoint)).toBe(true);
        expect(stateOfChain(chain)).toEqual(states[t]);
      }
    });

    it("returns undefined for the chain, record and head of unknown IDs", async () => {
      const { store } = await fresh();
      await commitRecord(store, undefined, checkpointRecord("s1", "known"));
      expect(await store.getChain("missing")).toBeUndefined();
      expect(await store.getRecord("missing")).toBeUndefined();
      expect(await store.getHead("missing")).toBeUndefined();
    });

    it("round-trips a 5 MB checkpoint unchanged", { timeout: 60_000 }, async () => {
      const { store } = await fresh();
      const chunk = "x".repeat(50_000);
      const messages = Array.from({ length: 100 }, (_, i) => userText(`${i}:${chunk}`));
      const record = checkpointRecord("s1", "big", {
        checkpoint: { sessionId: "s1", messages, artifacts: [], custom: { n: 1 } },
      });
      const expected = structuredClone(record);
      await commitRecord(store, undefined, record);
      const read = (await store.getRecord("big"))!;
      expect(read.checkpoint!.messages).toHaveLength(100);
      expect(read).toEqual(expected);
      expect(await store.getChain("big")).toEqual([expected]);
    });

    it("holds no state for a pending record until updateRecord finalizes it with a delta", async () => {
      const { store } = await fresh();
      const rootState: State = { sessionId: "s1", messages: [frozenMessage("hello")], artifacts: [], custom: { n: 0 } };
      const root = turnRecord({
        snapshotId: "root",
        sessionId: "s1",
        parent: undefined,
        prevState: { sessionId: "s1", messages: [], artifacts: [] },
        nextState: rootState,
        turnIndex: 0,
        createdAt: T0,
        policy: { minDeltaBytes: 1 << 20, ratio: 1, maxDepth: 100 },
      });
      const head = await commitRecord(store, undefined, root);
      await commitRecord(store, head, pendingRecord("s1", "bg", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 }));
      const pendingChain = (await store.getChain("bg"))!;
      expect(ids(pendingChain)).toEqual(["bg"]);
      expect(stateOfChain(pendingChain)).toBeUndefined();

      const finalState: State = {
        ...rootState,
        messages: [...rootState.messages, frozenMessage("done")],
        custom: { n: 1 },
      };
      const finished = turnRecord({
        snapshotId: "bg",
        sessionId: "s1",
        parent: root,
        prevState: rootState,
        nextState: finalState,
        turnIndex: 1,
        createdAt: T0 + 1,
        policy: { minDeltaBytes: 1 << 20, ratio: 1, maxDepth: 100 },
      });
      expect(finished.delta).toBeDefined();
      const stored = await store.updateRecord("bg", (e) =>
        e.status === "pending" ? { ...finished, updatedAt: T0 + 5 } : null,
      );
      expect(stored).toEqual({ ...structuredClone(finished), updatedAt: T0 + 5 });
      expect(ids((await store.getChain("bg"))!)).toEqual(["root", "bg"]);
      expect(await readState(store, "bg")).toEqual(structuredClone(finalState));
    });
  });
}
