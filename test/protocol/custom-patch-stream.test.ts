import { describe, expect, it } from "vitest";
import { applyCustomPatch } from "../../src/protocol/custom-patch-stream.js";

describe("applyCustomPatch", () => {
  it("returns the patched document and leaves the input unchanged", () => {
    const before = { tasks: [{ id: 1, title: "a" }], nextId: 2 };
    const after = applyCustomPatch(before, [
      { op: "add", path: "/tasks/-", value: { id: 2, title: "b" } },
      { op: "replace", path: "/nextId", value: 3 },
    ]);
    expect(after).toEqual({
      tasks: [
        { id: 1, title: "a" },
        { id: 2, title: "b" },
      ],
      nextId: 3,
    });
    expect(before).toEqual({ tasks: [{ id: 1, title: "a" }], nextId: 2 });
  });
});
