import { describe, expect, it } from "vitest";
import type { Artifact, Message } from "../../src/types/content.js";
import type { SessionState } from "../../src/types/session-state.js";
import {
  DEFAULT_CHECKPOINT_POLICY,
  recordStateFields,
  type CheckpointPolicy,
} from "../../stores/ledger/checkpoint-policy.js";
import { deepFreeze } from "../../stores/ledger/frozen-value.js";
import { chainFrom, stateOfChain, walkChain } from "../../stores/ledger/state-chain.js";
import { applyStateDelta, diffState, jsonBytes } from "../../stores/ledger/state-delta.js";
import type { SnapshotRecord, StateDelta } from "../../stores/snapshot-store.js";
import { frozenMessage } from "./ledger-fixtures.js";

type State = SessionState<unknown>;

const artifact = (name: string | undefined, text: string): Artifact =>
  deepFreeze<Artifact>({ ...(name ? { name } : {}), parts: [{ text }] });

function state(messages: Message[], artifacts: Artifact[] = [], custom?: unknown): State {
  return deepFreeze({ sessionId: "s", messages, artifacts, ...(custom === undefined ? {} : { custom }) });
}

/** Diffs `before` → `after`, applies the delta to `before` (also after a JSON round trip, as a store would) and returns the delta. */
function roundTrip(before: State, after: State): StateDelta<unknown> {
  const delta = diffState(before, after);
  const expected = structuredClone(after);
  expect(applyStateDelta(before, delta)).toEqual(expected);
  expect(applyStateDelta(before, JSON.parse(JSON.stringify(delta)) as StateDelta<unknown>)).toEqual(expected);
  return delta;
}

const m = [0, 1, 2, 3, 4, 5].map((i) => frozenMessage(`m${i}`));

describe("diffState / applyStateDelta", () => {
  it("stores only the appended messages when the history grows", () => {
    const delta = roundTrip(state([m[0]!, m[1]!]), state([m[0]!, m[1]!, m[2]!, m[3]!]));
    expect(delta.keepMessages).toBe(2);
    expect(delta.appendMessages).toEqual([m[2], m[3]]);
    expect(delta.customPatch).toBeUndefined();
    expect(delta.artifacts).toBeUndefined();
  });

  it("keeps the common prefix and re-appends the rest when the history is rewritten (setMessages)", () => {
    const before = state([m[0]!, m[1]!, m[2]!, m[3]!]);
    expect(roundTrip(before, state([m[0]!, m[1]!]))).toMatchObject({ keepMessages: 2, appendMessages: [] });
    expect(roundTrip(before, state([m[0]!, m[4]!]))).toMatchObject({ keepMessages: 1, appendMessages: [m[4]] });
    expect(roundTrip(before, state([m[5]!, m[1]!]))).toMatchObject({ keepMessages: 0, appendMessages: [m[5], m[1]] });
    expect(roundTrip(before, state([]))).toMatchObject({ keepMessages: 0, appendMessages: [] });
  });

  it("uses a kept-messages hint when it is right and falls back to comparing when it is not", () => {
    const before = state([m[0]!, m[1]!, m[2]!]);
    const after = state([m[0]!, m[1]!, m[4]!]);
    const exact = diffState(before, after);
    expect(exact).toMatchObject({ keepMessages: 2, appendMessages: [m[4]] });
    expect(diffState(before, after, 2)).toEqual(exact);
    expect(diffState(before, after, 1)).toEqual(exact); // too small: comparing continues from the hint
    expect(diffState(before, after, 3)).toEqual(exact); // too large: its last message differs, so it is ignored
    expect(diffState(before, after, 99)).toEqual(exact);
  });

  it("with a right hint, reads only the last kept message of each history, not the whole history", () => {
    const history = Array.from({ length: 1000 }, (_, i) => frozenMessage(`h${i}`));
    let reads = 0;
    /** `messages` behind a proxy that counts reads of its elements. */
    const counted = (messages: Message[]): Message[] =>
      new Proxy(messages, {
        get(target, key, receiver) {
          if (typeof key === "string" && /^\d+$/.test(key)) reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
    const before = deepFreeze({ sessionId: "s", messages: counted(history), artifacts: [] });
    const after = deepFreeze({ sessionId: "s", messages: counted([...history, m[0]!]), artifacts: [] });
    reads = 0;
    const delta = diffState(before, after, 1000);
    expect(delta).toMatchObject({ keepMessages: 1000, appendMessages: [m[0]] });
    expect(reads).toBeLessThanOrEqual(4);
  });

  it("compares messages by identity, so an equal but new message object is stored again", () => {
    const copy = deepFreeze(structuredClone(m[1]!));
    expect(roundTrip(state([m[0]!, m[1]!]), state([m[0]!, copy]))).toMatchObject({
      keepMessages: 1,
      appendMessages: [copy],
    });
  });

  it("patches custom state as JSON", () => {
    const delta = roundTrip(
      state([], [], { n: 1, items: ["a", "b"], deep: { x: 1 } }),
      state([], [], { n: 2, items: ["a", "b", "c"], deep: { x: 1 } }),
    );
    expect(delta.customPatch).toHaveLength(2);
    expect(delta.customPatch).toEqual(
      expect.arrayContaining([
        { op: "replace", path: "/n", value: 2 },
        { op: "add", path: "/items/2", value: "c" },
      ]),
    );
  });

  it.each<[string, unknown, unknown]>([
    ["absent → object", undefined, { n: 1 }],
    ["number → object", 5, { n: 1 }],
    ["object → array", { n: 1 }, [1, 2]],
    ["array → object", [1, 2], { n: 1 }],
    ["object → string", { n: 1 }, "text"],
    ["object → null", { n: 1 }, null],
    ["null → object", null, { n: 2 }],
  ])("replaces the custom root when its kind changes (%s)", (_label, before, after) => {
    const delta = roundTrip(state([], [], before), state([], [], after));
    expect(delta.customPatch).toEqual([{ op: "replace", path: "", value: after }]);
  });

  it.each<[string, unknown]>([
    ["an object", { n: 1 }],
    ["a number", 0],
    ["null", null],
  ])("records the removal of custom state (%s)", (_label, before) => {
    const delta = roundTrip(state([m[0]!], [], before), state([m[0]!]));
    expect(delta.customRemoved).toBe(true);
    expect(delta.customPatch).toBeUndefined();
    expect("custom" in applyStateDelta(state([m[0]!], [], before), delta)).toBe(false);
  });

  it("stores no custom change when the custom state is the same object", () => {
    const custom = deepFreeze({ n: 1 });
    const delta = roundTrip(state([m[0]!], [], custom), state([m[0]!, m[1]!], [], custom));
    expect(delta.customPatch).toBeUndefined();
    expect(delta.customRemoved).toBeUndefined();
  });

  it("stores no custom change when the custom state is a new object equal to the old one", () => {
    const delta = roundTrip(state([m[0]!], [], { n: 1, list: [1] }), state([m[0]!], [], { n: 1, list: [1] }));
    expect(delta.customPatch).toBeUndefined();
    expect(delta.customRemoved).toBeUndefined();
  });

  it("replaces a named artifact by name and appends unnamed ones", () => {
    const a1 = artifact("a", "v1");
    const b = artifact("b", "b");
    const u1 = artifact(undefined, "u1");
    const a2 = artifact("a", "v2");
    const u2 = artifact(undefined, "u2");
    const c = artifact("c", "c");
    const delta = roundTrip(state([], [a1, b, u1]), state([], [a2, b, u1, u2, c]));
    expect(delta.artifactsReset).toBeUndefined();
    expect(delta.artifacts).toEqual([a2, u2, c]);
  });

  it("resets the artifact list when artifacts are removed or reordered", () => {
    const a = artifact("a", "a");
    const b = artifact("b", "b");
    const u = artifact(undefined, "u");
    expect(roundTrip(state([], [a, b, u]), state([], [a, u]))).toMatchObject({
      artifactsReset: true,
      artifacts: [a, u],
    });
    expect(roundTrip(state([], [a, b]), state([], [b, a]))).toMatchObject({ artifactsReset: true, artifacts: [b, a] });
    const cleared = roundTrip(state([], [a, b]), state([], []));
    expect(cleared.artifactsReset).toBe(true);
    expect(cleared.artifacts).toBeUndefined();
  });

  it("changes nothing for an unchanged state (an empty delta)", () => {
    const s = state([m[0]!, m[1]!], [artifact("a", "a")], { n: 1 });
    const delta = roundTrip(s, s);
    expect(delta).toEqual({ keepMessages: 2, appendMessages: [] });
    expect(diffState(s, state([m[0]!, m[1]!, m[2]!], s.artifacts, s.custom))).toEqual({
      keepMessages: 2,
      appendMessages: [m[2]],
    });
  });

  it("shares the parent's frozen messages, freezes the result and leaves a frozen parent untouched", () => {
    const parent = state([m[0]!, m[1]!], [artifact("a", "a")], { n: 1, items: ["x"] });
    const snapshot = structuredClone(parent);
    const next = applyStateDelta(
      parent,
      diffState(parent, state([m[0]!, m[1]!, m[2]!], parent.artifacts, { n: 2, items: ["x", "y"] })),
    );
    expect(next.messages[0]).toBe(m[0]);
    expect(next.artifacts[0]).toBe(parent.artifacts[0]);
    expect(Object.isFrozen(next)).toBe(true);
    expect(Object.isFrozen(next.messages)).toBe(true);
    expect(Object.isFrozen(next.custom)).toBe(true);
    expect(parent).toEqual(snapshot);
  });

  it("reproduces every state of a long sequence of mixed changes by chaining deltas", () => {
    let runtime = state([], [], { n: 0 });
    let replayed: State = runtime;
    for (let t = 1; t <= 300; t++) {
      let messages = [...runtime.messages, frozenMessage(`t${t}`)];
      if (t % 17 === 0) messages = messages.slice(Math.floor(messages.length / 2));
      let artifacts = runtime.artifacts;
      if (t % 3 === 0) artifacts = [...artifacts.filter((a) => a.name !== `k${t % 5}`), artifact(`k${t % 5}`, `t${t}`)];
      if (t % 7 === 0) artifacts = [...artifacts, artifact(undefined, `u${t}`)];
      if (t % 41 === 0) artifacts = [];
      const custom = t % 29 === 0 ? undefined : t % 31 === 0 ? [t] : { n: t, parity: t % 2 ? "odd" : "even" };
      const next = state(messages, artifacts, custom);
      replayed = applyStateDelta(replayed, JSON.parse(JSON.stringify(diffState(runtime, next))) as StateDelta<unknown>);
      expect(replayed, `turn ${t}`).toEqual(structuredClone(next));
      runtime = next;
    }
  });
});

describe("recordStateFields", () => {
  const small: StateDelta<unknown> = { keepMessages: 1, appendMessages: [frozenMessage("hi")] };
  const parentAt = (
    fields: Partial<Pick<SnapshotRecord, "depth" | "deltaBytes" | "checkpointBytes" | "checkpointTurn">>,
  ) => ({
    depth: 0,
    deltaBytes: 0,
    checkpointBytes: 1000,
    checkpointTurn: 4,
    ...fields,
  });
  const s = state([frozenMessage("a"), frozenMessage("hi")], [], { n: 1 });

  it("checkpoints the first record of a session whatever the policy", () => {
    expect(recordStateFields(undefined, small, () => s, 0, { minDeltaBytes: 1e9, ratio: 100, maxDepth: 1e9 })).toEqual({
      checkpoint: s,
      depth: 0,
      deltaBytes: 0,
      checkpointBytes: jsonBytes(s),
      checkpointTurn: 0,
    });
  });

  it("stores a delta below the thresholds, carrying depth, bytes and the checkpoint's turn, without computing the state", () => {
    const policy: CheckpointPolicy = { minDeltaBytes: 10_000, ratio: 1, maxDepth: 10 };
    const fields = recordStateFields(
      parentAt({ depth: 2, deltaBytes: 300 }),
      small,
      () => {
        throw new Error("the state is not needed for a delta");
      },
      7,
      policy,
    );
    expect(fields).toEqual({
      delta: small,
      depth: 3,
      deltaBytes: 300 + jsonBytes(small),
      checkpointBytes: 1000,
      checkpointTurn: 4,
    });
  });

  it("checkpoints once the deltas reach both minDeltaBytes and ratio × the checkpoint's size", () => {
    const bytes = jsonBytes(small);
    const policy: CheckpointPolicy = { minDeltaBytes: 500, ratio: 2, maxDepth: 100 };
    // Enough bytes for minDeltaBytes but under 2 × 1000.
    expect(
      recordStateFields(parentAt({ depth: 5, deltaBytes: 600 }), small, () => s, 9, policy).checkpoint,
    ).toBeUndefined();
    // Over 2 × 1000 but under minDeltaBytes (a tiny checkpoint).
    expect(
      recordStateFields(parentAt({ depth: 5, deltaBytes: 100, checkpointBytes: 10 }), small, () => s, 9, {
        ...policy,
        minDeltaBytes: 100 + bytes + 1,
      }).checkpoint,
    ).toBeUndefined();
    // Exactly at minDeltaBytes, the ratio met.
    expect(
      recordStateFields(parentAt({ depth: 5, deltaBytes: 100, checkpointBytes: 10 }), small, () => s, 9, {
        ...policy,
        minDeltaBytes: 100 + bytes,
      }).checkpoint,
    ).toBe(s);
    // Exactly at both thresholds.
    const due = recordStateFields(parentAt({ depth: 5, deltaBytes: 2000 - bytes }), small, () => s, 9, policy);
    expect(due).toEqual({ checkpoint: s, depth: 0, deltaBytes: 0, checkpointBytes: jsonBytes(s), checkpointTurn: 9 });
  });

  it("checkpoints after maxDepth deltas whatever their size", () => {
    const policy: CheckpointPolicy = { minDeltaBytes: 1e9, ratio: 1, maxDepth: 3 };
    expect(recordStateFields(parentAt({ depth: 1 }), small, () => s, 6, policy)).toMatchObject({
      depth: 2,
      delta: small,
    });
    expect(recordStateFields(parentAt({ depth: 2 }), small, () => s, 7, policy)).toMatchObject({
      depth: 0,
      checkpoint: s,
      checkpointTurn: 7,
    });
  });

  it("counts a value JSON cannot serialize (undefined) as zero bytes", () => {
    expect(jsonBytes(undefined)).toBe(0);
    expect(jsonBytes({ a: "é" })).toBe(Buffer.byteLength('{"a":"é"}'));
  });

  it("defaults to 1 MiB, ratio 4 and 4096 deltas", () => {
    expect(DEFAULT_CHECKPOINT_POLICY).toEqual({ minDeltaBytes: 1024 * 1024, ratio: 4, maxDepth: 4096 });
    expect(recordStateFields(parentAt({ depth: 4094, deltaBytes: 0 }), small, () => s, 1, undefined).delta).toBe(small);
    expect(recordStateFields(parentAt({ depth: 4095, deltaBytes: 0 }), small, () => s, 1, undefined).checkpoint).toBe(
      s,
    );
  });
});

describe("walkChain / chainFrom / stateOfChain", () => {
  // A checkpoint c0 then deltas d1, d2 (a linear chain), and a branch b2 on d1.
  const s0 = state([m[0]!], [], { n: 0 });
  const s1 = state([m[0]!, m[1]!], [], { n: 1 });
  const s2 = state([m[0]!, m[1]!, m[2]!], [], { n: 2 });
  const sb = state([m[0]!, m[1]!, m[3]!], [], { n: 3 });
  const rec = (
    snapshotId: string,
    parentId: string | undefined,
    fields: Partial<SnapshotRecord<unknown>>,
  ): SnapshotRecord<unknown> => ({
    snapshotId,
    sessionId: "s",
    ...(parentId ? { parentId } : {}),
    turnIndex: 0,
    createdAt: 0,
    updatedAt: 0,
    status: "completed",
    depth: 0,
    deltaBytes: 0,
    checkpointBytes: 0,
    checkpointTurn: 0,
    ...fields,
  });
  const c0 = rec("c0", undefined, { checkpoint: s0 });
  const d1 = rec("d1", "c0", { delta: diffState(s0, s1), depth: 1, turnIndex: 1 });
  const d2 = rec("d2", "d1", { delta: diffState(s1, s2), depth: 2, turnIndex: 2 });
  const b2 = rec("b2", "d1", { delta: diffState(s1, sb), depth: 2, turnIndex: 2 });
  const all = new Map([c0, d1, d2, b2].map((r) => [r.snapshotId, r]));
  const reader = (records: Map<string, SnapshotRecord<unknown>>) => async (id: string) => records.get(id);

  it("walks from a record back to its nearest checkpoint, oldest first, and yields its state", async () => {
    expect((await walkChain(reader(all), "d2"))!.map((r) => r.snapshotId)).toEqual(["c0", "d1", "d2"]);
    expect((await walkChain(reader(all), "b2"))!.map((r) => r.snapshotId)).toEqual(["c0", "d1", "b2"]);
    expect((await walkChain(reader(all), "c0"))!.map((r) => r.snapshotId)).toEqual(["c0"]);
    expect(stateOfChain((await walkChain(reader(all), "d2"))!)).toEqual(structuredClone(s2));
    expect(stateOfChain((await walkChain(reader(all), "b2"))!)).toEqual(structuredClone(sb));
  });

  it("returns undefined for an unknown record", async () => {
    expect(await walkChain(reader(all), "nope")).toBeUndefined();
    expect(await chainFrom(all.values(), "nope")).toBeUndefined();
  });

  it("fails with DATA_LOSS naming the missing ancestor", async () => {
    const broken = new Map(all);
    broken.delete("d1");
    await expect(walkChain(reader(broken), "d2")).rejects.toMatchObject({
      status: "DATA_LOSS",
      message: expect.stringContaining('"d1"'),
    });
    await expect(chainFrom(broken.values(), "d2")).rejects.toMatchObject({ status: "DATA_LOSS" });
  });

  it("fails with DATA_LOSS when a delta's parent link is missing or the links loop", async () => {
    const orphan = rec("orphan", undefined, { delta: diffState(s0, s1), depth: 1 });
    await expect(walkChain(reader(new Map([["orphan", orphan]])), "orphan")).rejects.toMatchObject({
      status: "DATA_LOSS",
      message: expect.stringContaining('its ancestor "(none)" is missing'),
    });
    const x = rec("x", "y", { delta: diffState(s0, s1), depth: 3 });
    const y = rec("y", "x", { delta: diffState(s0, s1), depth: 2 });
    const loop = new Map([
      ["x", x],
      ["y", y],
    ]);
    await expect(walkChain(reader(loop), "x")).rejects.toMatchObject({ status: "DATA_LOSS" });
    await expect(chainFrom(loop.values(), "x")).rejects.toMatchObject({ status: "DATA_LOSS" });
  });

  it("picks a record's chain out of candidates by parent links, ignoring other branches", async () => {
    expect((await chainFrom([b2, d2, d1, c0], "d2"))!.map((r) => r.snapshotId)).toEqual(["c0", "d1", "d2"]);
    expect((await chainFrom([b2, d2, d1, c0], "b2"))!.map((r) => r.snapshotId)).toEqual(["c0", "d1", "b2"]);
  });

  it("fails with DATA_LOSS naming the first record when a chain does not start at a checkpoint", () => {
    expect(() => stateOfChain([d1, d2])).toThrow(
      expect.objectContaining({
        status: "DATA_LOSS",
        message: expect.stringContaining('its ancestor "d1" is missing'),
      }),
    );
  });

  it("gives the state the record's session ID when its checkpoint carries none", () => {
    const { sessionId: _omitted, ...withoutId } = s0;
    const root = rec("c0", undefined, { sessionId: "from-record", checkpoint: deepFreeze(withoutId) as State });
    expect(stateOfChain([root])?.sessionId).toBe("from-record");
  });

  it("yields no state for a pending record", () => {
    expect(stateOfChain([rec("p", "c0", { status: "pending" })])).toBeUndefined();
    expect(stateOfChain([])).toBeUndefined();
  });
});
