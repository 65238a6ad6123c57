import { describe, expect, it } from "vitest";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";
import {
  checkAppend,
  checkChunkLogKey,
  checkKeepUntil,
  checkNow,
  checkRead,
  MAX_KEEP_UNTIL,
} from "../../stores/chunk-arguments.js";
import type { ChunkLogKey, StoredChunk } from "../../stores/chunk-log.js";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";
import { chunk, chunks } from "./chunk-factory.js";

// The argument checks every chunk log runs before touching its storage: which values they accept,
// and the status and message of each refusal (the message names the method and the bad value).

const KEY: ChunkLogKey = { sessionId: "s1", snapshotId: "bg" };
const LATER = Date.now() + 3_600_000;

/** A chunk whose value is `value` (what a caller might pass where a chunk belongs). */
const odd = (value: unknown): StoredChunk => ({ sequence: 1, chunk: value as AgentStreamChunk });

describe("checkChunkLogKey", () => {
  it("refuses a key without a session ID, naming the method and the missing value", () => {
    expectThrowsAgentError(
      () => checkChunkLogKey({ snapshotId: "bg" } as ChunkLogKey, "hasChunks"),
      "INVALID_ARGUMENT",
      "hasChunks: the key needs a session ID (a non-empty string), got undefined",
    );
  });

  it("refuses a session ID that is not a string", () => {
    expectThrowsAgentError(
      () => checkChunkLogKey({ sessionId: 42, snapshotId: "bg" } as unknown as ChunkLogKey, "keepChunks"),
      "INVALID_ARGUMENT",
      "keepChunks: the key needs a session ID (a non-empty string), got 42",
    );
  });

  it("refuses an invalid snapshot ID, saying what a valid one looks like", () => {
    expectThrowsAgentError(
      () => checkChunkLogKey({ sessionId: "s1", snapshotId: "../escape" }, "watchChunks"),
      "INVALID_ARGUMENT",
      `watchChunks: invalid snapshot ID "../escape" in the key: use the detached invocation's snapshot ID ` +
        `(1-200 letters, digits, '.', '_' or '-', starting with a letter or digit)`,
    );
  });
});

describe("checkKeepUntil", () => {
  it("accepts keep-until times from 0 to the latest a Date can hold", () => {
    expect(() => checkKeepUntil(0, "keepChunks")).not.toThrow();
    expect(() => checkKeepUntil(MAX_KEEP_UNTIL, "keepChunks")).not.toThrow();
  });

  it("refuses a keep-until time past the latest a Date can hold, naming the range", () => {
    expectThrowsAgentError(
      () => checkKeepUntil(MAX_KEEP_UNTIL + 1, "keepChunks"),
      "INVALID_ARGUMENT",
      `keepChunks: keepUntil must be an integer epoch-millisecond time from 0 to ${MAX_KEEP_UNTIL} (got ${MAX_KEEP_UNTIL + 1})`,
    );
  });
});

describe("checkNow", () => {
  it("refuses a time that is not a finite number, naming the method and the value", () => {
    expectThrowsAgentError(
      () => checkNow(Number.POSITIVE_INFINITY, "sweepChunks"),
      "INVALID_ARGUMENT",
      "sweepChunks: now must be an epoch-millisecond number (got Infinity)",
    );
  });
});

describe("checkRead", () => {
  it("names readChunks when the key is bad", () => {
    expectThrowsAgentError(
      () => checkRead({ sessionId: "", snapshotId: "bg" }, 0, 10),
      "INVALID_ARGUMENT",
      /^readChunks: the key needs a session ID/,
    );
  });
});

describe("checkAppend", () => {
  it("resolves to each chunk's JSON, in order", () => {
    expect(checkAppend(KEY, chunks(4, 5), LATER)).toEqual(chunks(4, 5).map((c) => JSON.stringify(c.chunk)));
  });

  it("names appendChunks when the key is bad", () => {
    expectThrowsAgentError(
      () => checkAppend({ sessionId: "s1", snapshotId: "" }, [chunk(1)], LATER),
      "INVALID_ARGUMENT",
      /^appendChunks: invalid snapshot ID "" in the key/,
    );
  });

  it("names appendChunks when the keep-until time is bad", () => {
    expectThrowsAgentError(
      () => checkAppend(KEY, [chunk(1)], -1),
      "INVALID_ARGUMENT",
      /^appendChunks: keepUntil must be an integer epoch-millisecond time from 0 to .* \(got -1\)$/,
    );
  });

  it("says which chunk breaks the run of consecutive sequences and which sequence was expected", () => {
    expectThrowsAgentError(
      () => checkAppend(KEY, [chunk(5), chunk(6), chunk(9)], LATER),
      "INVALID_ARGUMENT",
      "appendChunks: sequences within one append must be consecutive: chunk 2 has sequence 9, expected 7",
    );
  });

  it("refuses a chunk that JSON cannot encode, passing on JSON's reason", () => {
    expectThrowsAgentError(
      () => checkAppend(KEY, [odd({ n: 1n })], LATER),
      "INVALID_ARGUMENT",
      "appendChunks: chunk 1 is not a JSON value (Do not know how to serialize a BigInt)",
    );
  });

  it("refuses a chunk that encodes to no JSON at all (undefined, a function)", () => {
    for (const value of [undefined, () => 1]) {
      expectThrowsAgentError(
        () => checkAppend(KEY, [odd(value)], LATER),
        "INVALID_ARGUMENT",
        /^appendChunks: chunk 1 is not a JSON value$/,
      );
    }
  });

  it("refuses a chunk too deeply nested to encode with RESOURCE_EXHAUSTED, keeping the cause", () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 1_000_000; i++) deep = { d: deep };
    const error = expectThrowsAgentError(
      () => checkAppend(KEY, [odd(deep)], LATER),
      "RESOURCE_EXHAUSTED",
      /^appendChunks: chunk 1 of snapshot bg is too large to store \(.+\); nothing was appended$/,
    );
    expect(error.cause).toBeInstanceOf(RangeError);
  });
});
