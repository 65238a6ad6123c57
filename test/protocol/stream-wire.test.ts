import { describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import {
  modelChunkFromWire,
  modelChunkToWire,
  patchOperationFromWire,
  patchOperationToWire,
} from "../../src/protocol/stream-wire.js";

describe("patch operation wire", () => {
  it("reads an operation without a value back without a value member", () => {
    expect(patchOperationFromWire(patchOperationToWire({ op: "remove", path: "/a" }))).toStrictEqual({
      op: "remove",
      path: "/a",
    });
  });

  it("refuses a non-JSON patch value with INVALID_ARGUMENT naming its path", () => {
    const write = () => patchOperationToWire({ op: "add", path: "/n", value: 1n });
    expect(write).toThrow(AgentError);
    expect(write).toThrow(/^patch value at "\/n" is not JSON-serialisable: /);
  });
});

describe("model chunk wire", () => {
  it("carries the chunk index", () => {
    const chunk = { role: "model" as const, content: [{ text: "b" }], index: 2 };
    expect(modelChunkToWire(chunk).index).toBe(2);
    expect(modelChunkFromWire(modelChunkToWire(chunk))).toStrictEqual(chunk);
  });

  it("sends an absent index as 0", () => {
    expect(modelChunkToWire({ role: "model", content: [] }).index).toBe(0);
  });
});
