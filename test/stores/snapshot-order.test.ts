import { describe, expect, it } from "vitest";
import {
  compareNewestFirst,
  DEFAULT_PAGE_SIZE,
  decodePageToken,
  encodePageToken,
  MAX_PAGE_SIZE,
  pageSizeOf,
} from "../../stores/snapshot-order.js";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";

// The newest-first order of a session's snapshots and its page tokens (stores/snapshot-order.ts).

describe("compareNewestFirst", () => {
  it("orders a greater createdAt first, then the greater snapshot ID, and calls equal keys equal", () => {
    expect(compareNewestFirst({ createdAt: 2, snapshotId: "a" }, { createdAt: 1, snapshotId: "z" })).toBeLessThan(0);
    expect(compareNewestFirst({ createdAt: 1, snapshotId: "b" }, { createdAt: 1, snapshotId: "a" })).toBe(-1);
    expect(compareNewestFirst({ createdAt: 1, snapshotId: "a" }, { createdAt: 1, snapshotId: "b" })).toBe(1);
    expect(compareNewestFirst({ createdAt: 1, snapshotId: "a" }, { createdAt: 1, snapshotId: "a" })).toBe(0);
  });
});

describe("snapshot page tokens", () => {
  it("decode back to the key they were made from", () => {
    expect(decodePageToken(encodePageToken({ createdAt: 5, snapshotId: "s-1" }))).toEqual({
      createdAt: 5,
      snapshotId: "s-1",
    });
  });

  it("are refused unless they hold a [createdAt number, snapshotId string] pair, quoting the token", () => {
    for (const payload of ['["5","s"]', "[5,6]", '{"createdAt":5}', "nope"]) {
      const token = Buffer.from(payload).toString("base64url");
      expectThrowsAgentError(
        () => decodePageToken(token),
        "INVALID_ARGUMENT",
        `invalid page token "${token}": pass the nextPageToken of a previous page unchanged`,
      );
    }
  });
});

describe("pageSizeOf", () => {
  it("uses the default when the size is unset or 0, and clamps the rest to 1..MAX_PAGE_SIZE", () => {
    expect(pageSizeOf()).toBe(DEFAULT_PAGE_SIZE);
    expect(pageSizeOf({ pageSize: 0 })).toBe(DEFAULT_PAGE_SIZE);
    expect(pageSizeOf({ pageSize: 0.5 })).toBe(1);
    expect(pageSizeOf({ pageSize: 7.9 })).toBe(7);
    expect(pageSizeOf({ pageSize: MAX_PAGE_SIZE + 1 })).toBe(MAX_PAGE_SIZE);
  });

  it("refuses a negative size, NaN or a size that is not a number", () => {
    for (const pageSize of [-1, Number.NaN, "5"]) {
      expectThrowsAgentError(
        () => pageSizeOf({ pageSize: pageSize as number }),
        "INVALID_ARGUMENT",
        `page size must not be negative (got ${String(pageSize)}); leave it unset for the default ${DEFAULT_PAGE_SIZE}`,
      );
    }
  });
});
