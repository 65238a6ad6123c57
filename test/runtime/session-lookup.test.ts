import { describe, expect, it } from "vitest";
import { expectAgentError, harness, register, replyTurn } from "./runtime-fixtures.js";
import { isExpired, loadRecordState, resolveRecordRef } from "../../src/runtime/sessions/session-lookup.js";
import type { SessionHead, SnapshotRecord } from "../../stores/snapshot-store.js";

async function twoSessions() {
  const { store, registry } = harness();
  const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
  const first = await agent.runText("one");
  const second = await agent.runText("two");
  return { store, first, second };
}

describe("isExpired", () => {
  const head = (expiresAt?: number): SessionHead => ({
    sessionId: "s",
    agent: "a",
    owner: "",
    headSnapshotId: "x",
    turnCount: 1,
    version: 1,
    createdAt: 0,
    updatedAt: 0,
    ...(expiresAt !== undefined ? { expiresAt } : {}),
  });

  it("is expired from the expiry time on, not before, and never without one", () => {
    expect(isExpired(head(1_000), 999)).toBe(false);
    expect(isExpired(head(1_000), 1_000)).toBe(true);
    expect(isExpired(head(1_000), 1_001)).toBe(true);
    expect(isExpired(head(), Number.MAX_SAFE_INTEGER)).toBe(false);
  });
});

describe("resolveRecordRef", () => {
  it("finds a snapshot by ID when the session ID given with it is its own", async () => {
    const { store, first } = await twoSessions();
    const found = await resolveRecordRef(store, "a", { snapshotId: first.snapshotId!, sessionId: first.sessionId });
    expect(found.record.snapshotId).toBe(first.snapshotId);
    expect(found.head.sessionId).toBe(first.sessionId);
  });

  it("refuses a snapshot ID paired with another session's ID (INVALID_ARGUMENT)", async () => {
    const { store, first, second } = await twoSessions();
    await expectAgentError(
      resolveRecordRef(store, "a", { snapshotId: first.snapshotId!, sessionId: second.sessionId }),
      "INVALID_ARGUMENT",
      /belongs to another session/,
    );
  });

  it("takes a session's head record when only the session ID is given", async () => {
    const { store, second } = await twoSessions();
    const found = await resolveRecordRef(store, "a", { sessionId: second.sessionId });
    expect(found.record.snapshotId).toBe(second.snapshotId);
  });
});

describe("loadRecordState", () => {
  it("has no state for a pending record (neither checkpoint nor delta), without asking the store", async () => {
    const { store, first } = await twoSessions();
    const record = (await store.getRecord(first.snapshotId!)) as SnapshotRecord;
    const { checkpoint: _checkpoint, delta: _delta, ...pending } = record;
    const asked: string[] = [];
    const watched = Object.assign(Object.create(store) as typeof store, {
      getChain: async (id: string) => void asked.push(id),
    });
    await expect(loadRecordState(watched, { ...pending, status: "pending" })).resolves.toBeUndefined();
    expect(asked).toEqual([]);
  });

  it("rebuilds a record's state from its checkpoint", async () => {
    const { store, first } = await twoSessions();
    const record = (await store.getRecord(first.snapshotId!)) as SnapshotRecord;
    const state = await loadRecordState(store, record);
    expect(state?.messages.map((m) => m.role)).toEqual(["user", "model"]);
  });
});
