import { describe, expect, it } from "vitest";
import { diffJson } from "../../src/inspector/json-diff.js";

describe("diffJson", () => {
  it("lists added, removed and changed values by path, keys sorted, arrays by index", () => {
    const before = { tasks: [{ id: 1, done: false }], nextId: 2, gone: true };
    const after = { tasks: [{ id: 1, done: true }, { id: 2 }], nextId: 3 };
    expect(diffJson(before, after)).toEqual([
      { path: "/gone", kind: "removed", before: true },
      { path: "/nextId", kind: "changed", before: 2, after: 3 },
      { path: "/tasks/0/done", kind: "changed", before: false, after: true },
      { path: "/tasks/1", kind: "added", after: { id: 2 } },
    ]);
  });

  it("finds nothing between equal values, and the whole value when it appears or changes type", () => {
    expect(diffJson({ a: [1, { b: null }] }, { a: [1, { b: null }] })).toEqual([]);
    expect(diffJson(undefined, { a: 1 })).toEqual([{ path: "", kind: "added", after: { a: 1 } }]);
    expect(diffJson([1], { 0: 1 })).toEqual([{ path: "", kind: "changed", before: [1], after: { 0: 1 } }]);
  });

  it("escapes ~ and / in keys as RFC 6901 does", () => {
    expect(diffJson({}, { "a/b~c": 1 })).toEqual([{ path: "/a~1b~0c", kind: "added", after: 1 }]);
  });
});
