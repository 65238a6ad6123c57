import { describe, expect, it } from "vitest";
import { uuidv7 } from "../../stores/uuid-v7.js";

const CANONICAL_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The Unix ms in the first 48 bits of a UUID v7. */
function msecsOf(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** 1,000 IDs in a row: 16,000 random bytes, so the 4 KiB pool is refilled along the way. */
function thousandIds(): string[] {
  return Array.from({ length: 1_000 }, () => uuidv7());
}

describe("uuidv7", () => {
  it("is a canonical version-7, variant-10 UUID, also across refills of its random pool", () => {
    for (const id of thousandIds()) expect(id).toMatch(CANONICAL_V7);
  });

  it("carries the current Unix time in ms in its first 48 bits", () => {
    const before = Date.now();
    const id = uuidv7();
    const after = Date.now();
    expect(msecsOf(id)).toBeGreaterThanOrEqual(before);
    expect(msecsOf(id)).toBeLessThanOrEqual(after + 1); // +1: a sequence that wrapped within the ms moves it on
  });

  it("sorts every later ID of this process greater, also many within one millisecond", () => {
    const run = Array.from({ length: 10_000 }, () => uuidv7());
    for (let i = 1; i < run.length; i++) expect(run[i]! > run[i - 1]!).toBe(true);
    const sameMs = run.filter((id, i) => i > 0 && msecsOf(id) === msecsOf(run[i - 1]!)).length;
    expect(sameMs).toBeGreaterThan(0); // the counter within one ms was exercised, not only new milliseconds
  });

  it("has random trailing bits that differ from ID to ID (every ID unique)", () => {
    const ids = thousandIds();
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(-10))).size).toBe(ids.length);
  });
});
