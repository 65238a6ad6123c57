import { describe, expect, it } from "vitest";
import { headToStore } from "../../stores/record-identity.js";
import { labelsMatch, validateLabels } from "../../stores/session-labels.js";
import { checkSessionQuery, decodeHeadPageToken, encodeHeadPageToken } from "../../stores/session-query.js";
import { hasSessionLifecycle } from "../../stores/snapshot-store.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";

describe("validateLabels", () => {
  it("returns a copy of valid labels and names the offending label otherwise", () => {
    const labels = { env: "prod", "a.b_c-d9": "" };
    const copy = validateLabels(labels);
    expect(copy).toEqual(labels);
    expect(copy).not.toBe(labels);
    expect(() => validateLabels({ env: "x", Team: "y" })).toThrow(
      expect.objectContaining({ status: "INVALID_ARGUMENT", message: expect.stringContaining('"Team"') }),
    );
    expect(() => validateLabels({ ["a".repeat(64)]: "x" })).toThrow(
      expect.objectContaining({ status: "INVALID_ARGUMENT" }),
    );
    expect(() => validateLabels(["env"])).toThrow(expect.objectContaining({ status: "INVALID_ARGUMENT" }));
  });

  it("shows at most 80 characters of an invalid label key in the error", () => {
    const key = `K${"x".repeat(100)}`;
    expect(() => validateLabels({ [key]: "v" })).toThrow(
      expect.objectContaining({
        message: expect.stringMatching(new RegExp(`^label key "${key.slice(0, 80)}…" is invalid`)),
      }),
    );
  });

  it("matches a filter only on every given key with exactly its value", () => {
    expect(labelsMatch({ a: "1", b: "2" }, { a: "1" })).toBe(true);
    expect(labelsMatch({ a: "1", b: "2" }, { a: "1", b: "3" })).toBe(false);
    expect(labelsMatch(undefined, {})).toBe(true);
    expect(labelsMatch(undefined, { a: "" })).toBe(false);
    expect(labelsMatch({}, { toString: "" } as Record<string, string>)).toBe(false); // never an inherited property
  });
});

describe("session queries", () => {
  it("applies defaults, clamps the page size to 1000 and round-trips page tokens", () => {
    expect(checkSessionQuery({ owner: "o", now: 5 })).toEqual({ owner: "o", pageSize: 50, now: 5 });
    expect(checkSessionQuery({ owner: "o", pageSize: 5000, now: 5 }).pageSize).toBe(1000);
    expect(checkSessionQuery({ owner: "o", agent: "", labels: {}, now: 5 })).toEqual({
      owner: "o",
      pageSize: 50,
      now: 5,
    });
    const key = { updatedAt: 123, sessionId: "s/ü" };
    expect(decodeHeadPageToken(encodeHeadPageToken(key))).toEqual(key);
    expect(() => checkSessionQuery({ owner: undefined as unknown as string })).toThrow(
      expect.objectContaining({ status: "INVALID_ARGUMENT" }),
    );
    expect(() => checkSessionQuery({ owner: "", updatedAfter: Number.NaN })).toThrow(
      expect.objectContaining({ status: "INVALID_ARGUMENT" }),
    );
  });

  it("headToStore rejects a ttl whose expiry is not a safe integer", () => {
    const head = {
      sessionId: "s",
      agent: "a",
      owner: "",
      headSnapshotId: "x",
      turnCount: 0,
      createdAt: 1,
      updatedAt: 1,
    };
    expect(headToStore({ expectedVersion: 0, head: { ...head, ttlMs: 10 } }).expiresAt).toBe(11);
    expect(() => headToStore({ expectedVersion: 0, head: { ...head, ttlMs: Number.MAX_SAFE_INTEGER } })).toThrow(
      expect.objectContaining({ status: "INVALID_ARGUMENT" }),
    );
  });

  it("hasSessionLifecycle tells stores with listHeads, deleteSession and sweepExpired apart", () => {
    expect(hasSessionLifecycle(new InMemorySessionStore())).toBe(true);
    expect(hasSessionLifecycle({ getHead: async () => undefined } as never)).toBe(false);
    expect(hasSessionLifecycle(undefined)).toBe(false);
  });
});
