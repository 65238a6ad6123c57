import { describe, expect, it } from "vitest";
import { recordJson } from "../../stores/file/record-json.js";
import type { SnapshotRecord } from "../../stores/snapshot-store.js";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";
import { checkpointRecord } from "./snapshot-factory.js";

// A record's JSON in the file store's session log (stores/file/record-json.ts).

describe("recordJson", () => {
  it("fails with RESOURCE_EXHAUSTED naming the snapshot when the record cannot be serialized as one string", () => {
    let state: unknown = 0;
    for (let i = 0; i < 200_000; i++) state = [state]; // deeper than JSON.stringify can go
    const record = { ...checkpointRecord("s1", "snap-deep"), checkpoint: state } as SnapshotRecord<unknown>;
    const error = expectThrowsAgentError(
      () => recordJson(record),
      "RESOURCE_EXHAUSTED",
      /^snapshot snap-deep is too large to store as one file \(.+\)$/,
    );
    expect(error.cause).toBeInstanceOf(RangeError);
  });

  it("passes on any other serialization error unchanged", () => {
    const state: { self?: unknown } = {};
    state.self = state;
    const record = { ...checkpointRecord("s1", "snap-cyclic"), checkpoint: state } as SnapshotRecord<unknown>;
    expect(() => recordJson(record)).toThrow(TypeError);
  });
});
