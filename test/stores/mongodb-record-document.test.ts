import { BSON } from "mongodb";
import { describe, expect, it } from "vitest";
import { userText } from "../../src/types/content.js";
import {
  CHECKPOINT_INLINE_BYTES,
  encodeRecord,
  inlineBytes,
  MAX_DOCUMENT_BYTES,
  nextVersion,
  tooLarge,
} from "../../stores/mongodb/record-document.js";
import { checkpointRecord, pendingRecord, type CounterRecord } from "./snapshot-factory.js";

// How a snapshot record becomes a MongoDB document (pure: no server). What is inline, what goes
// to chunk documents, where the size limits are, and the RESOURCE_EXHAUSTED error a user reads.

const MiB = 1024 * 1024;

/** A checkpoint record whose custom state carries `padding` ASCII characters (checkpointBytes fixed, so the size grows by exactly `padding`). */
function paddedCheckpoint(padding: number): CounterRecord {
  return checkpointRecord("s1", "r1", {
    checkpoint: { sessionId: "s1", messages: [], artifacts: [], custom: { n: 0, items: ["x".repeat(padding)] } },
    checkpointBytes: 0,
  });
}

/** A delta record whose appended message carries `padding` ASCII characters. */
function paddedDelta(padding: number): CounterRecord {
  return pendingRecord("s1", "r2", {
    status: "completed",
    turnIndex: 1,
    parentId: "r1",
    depth: 1,
    delta: { keepMessages: 0, appendMessages: [userText("x".repeat(padding))] },
  });
}

/** The serialized size encodeRecord compares with the inline threshold: metadata fields plus state. */
function recordInlineBytes(record: CounterRecord): number {
  const { doc } = encodeRecord(record, 1, false);
  return inlineBytes(doc);
}

describe("record versions", () => {
  it("stamps a first version from the clock in microseconds", () => {
    const before = Date.now();
    const version = nextVersion(undefined);
    const after = Date.now();
    expect(version).toBeGreaterThanOrEqual(before * 1000);
    expect(version).toBeLessThanOrEqual(after * 1000);
  });

  it("stamps one more than a previous version that is ahead of the clock", () => {
    const ahead = (Date.now() + 60_000) * 1000;
    expect(nextVersion(ahead)).toBe(ahead + 1);
  });
});

describe("record documents: what is held inline", () => {
  it("stores no state for a record with neither checkpoint nor delta (a pending row)", () => {
    const { doc, chunks } = encodeRecord(pendingRecord("s1", "r1"), 1, false);
    expect(doc.state).toBeNull();
    expect(chunks).toBeUndefined();
  });

  it("keeps a small checkpoint inline in state, without chunks", () => {
    const record = checkpointRecord("s1", "r1");
    const { doc, chunks } = encodeRecord(record, 1, false);
    expect(doc.state).toBe(JSON.stringify({ checkpoint: record.checkpoint }));
    expect(doc.checkpointChunks).toBeNull();
    expect(chunks).toBeUndefined();
  });

  it("keeps a checkpoint inline when the record is exactly at the inline threshold", () => {
    const record = paddedCheckpoint(CHECKPOINT_INLINE_BYTES - recordInlineBytes(paddedCheckpoint(0)));
    expect(recordInlineBytes(record)).toBe(CHECKPOINT_INLINE_BYTES);
    const { doc, chunks } = encodeRecord(record, 1, false);
    expect(chunks).toBeUndefined();
    expect(doc.checkpointChunks).toBeNull();
  });

  it("moves the checkpoint to chunks when the record is one byte over the inline threshold", () => {
    const record = paddedCheckpoint(CHECKPOINT_INLINE_BYTES - recordInlineBytes(paddedCheckpoint(0)) + 1);
    const { doc, chunks } = encodeRecord(record, 1, false);
    expect(chunks?.ref.bytes).toBe(Buffer.byteLength(JSON.stringify(record.checkpoint), "utf8"));
    expect(doc.checkpointChunks).toEqual(chunks?.ref);
    expect(doc.state).toBeNull();
  });

  it("keeps a record's delta inline when its big checkpoint goes to chunks", () => {
    const delta = { keepMessages: 0, appendMessages: [userText("hello")] };
    const record: CounterRecord = { ...paddedCheckpoint(9 * MiB), delta };
    const { doc, chunks } = encodeRecord(record, 1, false);
    expect(chunks).toBeDefined();
    expect(doc.state).toBe(JSON.stringify({ delta }));
  });

  it("reuses the existing chunk set when the big checkpoint is unchanged", () => {
    const record = paddedCheckpoint(9 * MiB);
    const ref = { set: "existing-set", count: 2, bytes: 9 * MiB + 100 };
    const { doc, chunks } = encodeRecord(record, 2, true, { ref, json: JSON.stringify(record.checkpoint) });
    expect(chunks).toBeUndefined();
    expect(doc.checkpointChunks).toBe(ref);
  });

  it("writes a new chunk set when the big checkpoint changed", () => {
    const record = paddedCheckpoint(9 * MiB);
    const ref = { set: "existing-set", count: 2, bytes: 9 * MiB + 100 };
    const previous = JSON.stringify(paddedCheckpoint(9 * MiB - 1).checkpoint);
    const { doc, chunks } = encodeRecord(record, 2, true, { ref, json: previous });
    expect(chunks?.ref.set).not.toBe("existing-set");
    expect(doc.checkpointChunks).toEqual(chunks?.ref);
  });
});

describe("record documents: MongoDB's 16 MiB limit", () => {
  /** The BSON size of the document of a delta record padded by `padding`. */
  const deltaDocBytes = (padding: number): number =>
    BSON.calculateObjectSize(encodeRecord(paddedDelta(padding), 1, false).doc as unknown as BSON.Document);

  it("encodes a record whose document is exactly 16 MiB", () => {
    const record = paddedDelta(MAX_DOCUMENT_BYTES - deltaDocBytes(0));
    const { doc } = encodeRecord(record, 1, false);
    expect(BSON.calculateObjectSize(doc as unknown as BSON.Document)).toBe(MAX_DOCUMENT_BYTES);
  });

  it("refuses a record whose document is one byte over 16 MiB, with its size in the details", () => {
    const padding = MAX_DOCUMENT_BYTES - deltaDocBytes(0) + 1;
    expect(() => encodeRecord(paddedDelta(padding), 1, false)).toThrow(
      expect.objectContaining({
        status: "RESOURCE_EXHAUSTED",
        details: { snapshotId: "r2", bytes: MAX_DOCUMENT_BYTES + 1, limitBytes: MAX_DOCUMENT_BYTES },
      }),
    );
  });

  it("refuses a record with a big checkpoint whose delta alone is over 16 MiB (only a checkpoint is split)", () => {
    const record: CounterRecord = {
      ...paddedCheckpoint(1),
      delta: { keepMessages: 0, appendMessages: [userText("x".repeat(17 * MiB))] },
    };
    expect(() => encodeRecord(record, 1, false)).toThrow(expect.objectContaining({ status: "RESOURCE_EXHAUSTED" }));
  });

  it("tells the user the size, the cause, that nothing was written and what to do", () => {
    const err = tooLarge("r9", 17.5 * MiB, false);
    expect(err.status).toBe("RESOURCE_EXHAUSTED");
    expect(err.message).toBe(
      "snapshot r9 needs a 17.5 MiB document (its delta: one turn's new messages and artifacts; only a checkpoint is " +
        "split into chunks), over MongoDB's 16 MiB document limit; nothing was written. " +
        "Make the turn smaller (e.g. store large tool results or artifacts elsewhere and reference them) or use the SQLite or PostgreSQL store (64 MiB per record).",
    );
    expect(err.details).toEqual({ snapshotId: "r9", bytes: 17.5 * MiB, limitBytes: MAX_DOCUMENT_BYTES });
  });

  it("tells the user of a refused update that the stored record is unchanged", () => {
    expect(tooLarge("r9", 17 * MiB, true).message).toContain(
      "over MongoDB's 16 MiB document limit; the stored record is unchanged. Make the turn smaller",
    );
  });
});
