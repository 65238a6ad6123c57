import { describe, expect, it } from "vitest";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";
import { assertRecordShape, headToStore, keepIdentity } from "../../stores/record-identity.js";
import type { HeadCommit } from "../../stores/snapshot-store.js";
import { checkpointRecord, counterState, pendingRecord, type CounterState } from "./snapshot-factory.js";

// The checks every store runs on a commit before it writes anything (stores/record-identity.ts).

const head: HeadCommit<CounterState>["head"] = {
  sessionId: "s1",
  agent: "a",
  owner: "o",
  headSnapshotId: "r1",
  turnCount: 1,
  createdAt: 1,
  updatedAt: 1,
};

/** The message of the INVALID_ARGUMENT AgentError `fn` throws (fails the test on anything else). */
const invalidArgument = (fn: () => unknown): string => expectThrowsAgentError(fn, "INVALID_ARGUMENT").message;

describe("headToStore", () => {
  it("stores the head at expectedVersion + 1 with unset optional fields left out", () => {
    const stored = headToStore({
      expectedVersion: 4,
      head: { ...head, usage: undefined, labels: undefined, ttlMs: undefined },
    });
    expect(stored).toEqual({ ...head, version: 5 });
    expect(Object.keys(stored).sort()).toEqual([...Object.keys(head), "version"].sort());
  });

  it("accepts expectedVersion 0 (creating the session)", () => {
    expect(headToStore({ expectedVersion: 0, head }).version).toBe(1);
  });

  it("rejects a negative or fractional expectedVersion, naming it", () => {
    expect(invalidArgument(() => headToStore({ expectedVersion: -1, head }))).toBe(
      "commit: expectedVersion must be an integer >= 0 (got -1)",
    );
    expect(invalidArgument(() => headToStore({ expectedVersion: 1.5, head }))).toContain("(got 1.5)");
  });

  it("rejects a head without a sessionId or with an empty one", () => {
    const message = "commit: the head needs a non-empty sessionId";
    expect(invalidArgument(() => headToStore({ expectedVersion: 0, head: { ...head, sessionId: "" } }))).toBe(message);
    expect(
      invalidArgument(() => headToStore({ expectedVersion: 0, head: { ...head, sessionId: 7 as unknown as string } })),
    ).toBe(message);
  });

  it("rejects a head whose agent or owner is not a string, naming the session", () => {
    const message = "session s1: the head needs an agent name and an owner string";
    expect(
      invalidArgument(() => headToStore({ expectedVersion: 0, head: { ...head, agent: undefined as never } })),
    ).toBe(message);
    expect(invalidArgument(() => headToStore({ expectedVersion: 0, head: { ...head, owner: null as never } }))).toBe(
      message,
    );
  });

  it("rejects a record of another session", () => {
    const record = checkpointRecord("s2", "r1");
    expect(invalidArgument(() => headToStore({ expectedVersion: 0, head, record }))).toBe(
      "snapshot r1 belongs to session s2, not s1",
    );
  });

  it("rejects a record with an invalid snapshot ID", () => {
    const record = checkpointRecord("s1", "../r1");
    expect(invalidArgument(() => headToStore({ expectedVersion: 0, head, record }))).toContain("invalid snapshot ID");
  });

  it("checks the record's shape", () => {
    const record = checkpointRecord("s1", "r1", { status: undefined as never });
    expect(invalidArgument(() => headToStore({ expectedVersion: 0, head, record }))).toBe(
      "snapshot r1: status is required",
    );
  });

  it("never stores a caller's expiresAt, and computes it from updatedAt + ttlMs", () => {
    expect(headToStore({ expectedVersion: 0, head: { ...head, expiresAt: 99 } })).not.toHaveProperty("expiresAt");
    expect(headToStore({ expectedVersion: 0, head: { ...head, ttlMs: 10, expiresAt: 99 } }).expiresAt).toBe(11);
  });

  it("rejects a ttlMs that is not a positive integer", () => {
    for (const ttlMs of [0, -5, 1.5]) {
      expect(invalidArgument(() => headToStore({ expectedVersion: 0, head: { ...head, ttlMs } }))).toBe(
        `session s1: ttlMs must be a positive integer of milliseconds (got ${ttlMs})`,
      );
    }
  });

  it("rejects a ttlMs whose expiry would not be a safe integer, naming it", () => {
    const ttlMs = Number.MAX_SAFE_INTEGER;
    expect(invalidArgument(() => headToStore({ expectedVersion: 0, head: { ...head, ttlMs } }))).toBe(
      `session s1: ttlMs ${ttlMs} is too large`,
    );
  });

  it("rejects a ttlMs with an updatedAt that is not a finite number", () => {
    expect(
      invalidArgument(() =>
        headToStore({ expectedVersion: 0, head: { ...head, ttlMs: 10, updatedAt: Number.POSITIVE_INFINITY } }),
      ),
    ).toBe("session s1: updatedAt must be an epoch-millisecond number when ttlMs is set");
  });

  it("stores validated copies of the labels", () => {
    const labels = { env: "prod" };
    const stored = headToStore({ expectedVersion: 0, head: { ...head, labels } });
    expect(stored.labels).toEqual(labels);
    expect(stored.labels).not.toBe(labels);
    expect(
      invalidArgument(() => headToStore({ expectedVersion: 0, head: { ...head, labels: { Env: "x" } } })),
    ).toContain('"Env"');
  });
});

describe("assertRecordShape", () => {
  it("accepts a checkpoint record and a pending record", () => {
    expect(() => assertRecordShape(checkpointRecord("s1", "r1"))).not.toThrow();
    expect(() => assertRecordShape(pendingRecord("s1", "r1"))).not.toThrow();
  });

  it("rejects a record whose createdAt or updatedAt is not a number", () => {
    const message = "snapshot r1: createdAt and updatedAt must be epoch-millisecond numbers";
    expect(
      invalidArgument(() => assertRecordShape(checkpointRecord("s1", "r1", { createdAt: "1" as never, updatedAt: 1 }))),
    ).toBe(message);
    expect(invalidArgument(() => assertRecordShape(checkpointRecord("s1", "r1", { updatedAt: null as never })))).toBe(
      message,
    );
  });

  it("rejects a record with both a checkpoint and a delta", () => {
    const record = checkpointRecord("s1", "r1", { delta: { custom: { n: 1 } } as never });
    expect(invalidArgument(() => assertRecordShape(record))).toBe(
      "snapshot r1: a record holds a checkpoint or a delta, not both",
    );
  });
});

describe("keepIdentity", () => {
  const existing = checkpointRecord("s1", "r2", { parentId: "r1", createdAt: 5 });

  it("keeps the existing record's ID, session, creation time and parent over the mutator's", () => {
    const result = {
      ...existing,
      snapshotId: "x",
      sessionId: "y",
      createdAt: 9,
      parentId: "z",
      status: "failed" as const,
    };
    expect(keepIdentity(result, existing)).toEqual({ ...existing, status: "failed" });
  });

  it("drops a parent the mutator added to a root record", () => {
    const root = checkpointRecord("s1", "r1");
    expect(keepIdentity({ ...root, parentId: "r0" }, root)).not.toHaveProperty("parentId");
  });

  it("rejects a mutator result that is not an object", () => {
    for (const result of [null, "record"]) {
      expect(invalidArgument(() => keepIdentity(result as never, existing))).toBe(
        "the record mutator must return a record object or null",
      );
    }
  });

  it("checks the shape of the kept record", () => {
    const result = { ...existing, checkpoint: counterState("s1"), delta: { custom: { n: 2 } } as never };
    expect(invalidArgument(() => keepIdentity(result, existing))).toContain("a checkpoint or a delta, not both");
  });
});
