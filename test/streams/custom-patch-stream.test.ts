import { describe, expect, it } from "vitest";
import { applyCustomPatch, CustomPatchStream } from "../../src/streams/custom-patch-stream.js";

describe("CustomPatchStream", () => {
  it("replaces the whole document with the first state of a turn", () => {
    const stream = new CustomPatchStream();
    stream.startTurn();
    expect(stream.next({ a: 1 })).toStrictEqual([{ op: "replace", path: "", value: { a: 1 } }]);
  });

  it("sends an undefined state as a null document", () => {
    const stream = new CustomPatchStream();
    stream.startTurn();
    expect(stream.next(undefined)).toStrictEqual([{ op: "replace", path: "", value: null }]);
  });

  it("diffs later object states incrementally", () => {
    const stream = new CustomPatchStream();
    stream.startTurn();
    stream.next({ a: 1, b: [1] });
    expect(stream.next({ a: 2, b: [1] })).toStrictEqual([{ op: "replace", path: "/a", value: 2 }]);
  });

  it("produces no patch for an unchanged scalar state", () => {
    const stream = new CustomPatchStream();
    stream.startTurn();
    stream.next(7);
    expect(stream.next(7)).toBeUndefined();
  });

  it("replaces the whole document when a scalar state changes", () => {
    const stream = new CustomPatchStream();
    stream.startTurn();
    stream.next(7);
    expect(stream.next(8)).toStrictEqual([{ op: "replace", path: "", value: 8 }]);
  });

  it("replaces the whole document when an object state becomes null", () => {
    const stream = new CustomPatchStream();
    stream.startTurn();
    stream.next({ a: 1 });
    expect(stream.next(null)).toStrictEqual([{ op: "replace", path: "", value: null }]);
  });

  it("replaces the whole document when an array state becomes an object", () => {
    const stream = new CustomPatchStream();
    stream.startTurn();
    stream.next([1, 2]);
    expect(stream.next({ a: 1 })).toStrictEqual([{ op: "replace", path: "", value: { a: 1 } }]);
  });

  it("starts each turn with a whole-document replace again", () => {
    const stream = new CustomPatchStream();
    stream.startTurn();
    stream.next({ a: 1 });
    stream.startTurn();
    expect(stream.next({ a: 1 })).toStrictEqual([{ op: "replace", path: "", value: { a: 1 } }]);
  });

  it("keeps its own copy of the last state, so later mutation of the caller's object is diffed", () => {
    const stream = new CustomPatchStream();
    stream.startTurn();
    const state = { n: 1 };
    stream.next(state);
    state.n = 2;
    expect(stream.next(state)).toStrictEqual([{ op: "replace", path: "/n", value: 2 }]);
  });
});

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

  it("applies operations without validating them: replacing a missing member adds it", () => {
    expect(applyCustomPatch({}, [{ op: "replace", path: "/a", value: 1 }])).toStrictEqual({ a: 1 });
  });

  it("patches a structured clone, so non-JSON members such as Dates survive", () => {
    const when = new Date(0);
    const after = applyCustomPatch<{ when: Date; n: number }>({ when, n: 1 }, [
      { op: "replace", path: "/n", value: 2 },
    ]);
    expect(after.when).toBeInstanceOf(Date);
    expect(after.when).not.toBe(when);
    expect(after.when.getTime()).toBe(0);
  });

  it("patches an undefined document as null", () => {
    expect(applyCustomPatch(undefined, [{ op: "replace", path: "", value: { a: 1 } }])).toStrictEqual({ a: 1 });
    expect(applyCustomPatch(undefined, [])).toBeNull();
  });
});
