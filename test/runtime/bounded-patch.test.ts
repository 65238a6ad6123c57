import fastJsonPatch, { type Operation } from "fast-json-patch";
import { describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import type { JsonPatchOperation } from "../../src/types/agent-io.js";
import { applyBoundedPatch, type PatchBounds } from "../../src/runtime/sessions/bounded-patch.js";

// The bounded RFC 6902 applier of fork edits (issue 48): the same results as
// fast-json-patch on valid patches, and refusals at its bounds that never
// quote the document.

const BOUNDS: PatchBounds = { maxOperations: 1000, maxBytes: 4 * 1024 * 1024, maxDepth: 32 };

/** `[1, <hole>, 3]`: an array with a missing element (not JSON). */
function holey(): unknown[] {
  const list: unknown[] = [1];
  list[2] = 3;
  return list;
}

function refusal(document: unknown, patch: JsonPatchOperation[], bounds: PatchBounds = BOUNDS): AgentError {
  try {
    applyBoundedPatch(document, patch, bounds, "p");
  } catch (err) {
    expect(err).toBeInstanceOf(AgentError);
    return err as AgentError;
  }
  throw new Error("the patch applied");
}

describe("applyBoundedPatch: RFC 6902 semantics", () => {
  const doc = { a: [1, 2, 3], b: { c: "x", d: null }, e: true };
  const cases: [string, JsonPatchOperation[]][] = [
    ["add to an object", [{ op: "add", path: "/f", value: { g: [1] } }]],
    [
      "add at an array index and at the end",
      [
        { op: "add", path: "/a/1", value: 9 },
        { op: "add", path: "/a/-", value: 7 },
      ],
    ],
    [
      "remove from an array and an object",
      [
        { op: "remove", path: "/a/0" },
        { op: "remove", path: "/b/c" },
      ],
    ],
    ["replace the root", [{ op: "replace", path: "", value: [1] }]],
    ["move within the document", [{ op: "move", from: "/b/c", path: "/a/0" }]],
    [
      "copy a subtree, then change the copy only",
      [
        { op: "copy", from: "/b", path: "/h" },
        { op: "replace", path: "/h/c", value: "y" },
      ],
    ],
    [
      "test then replace",
      [
        { op: "test", path: "/b", value: { d: null, c: "x" } },
        { op: "replace", path: "/e", value: false },
      ],
    ],
    ["escaped pointer tokens", [{ op: "add", path: "/x~1y~0z", value: 1 }]],
  ];
  for (const [name, patch] of cases) {
    it(`${name}: same result as fast-json-patch, input untouched`, () => {
      const before = structuredClone(doc);
      const expected = fastJsonPatch.applyPatch(
        structuredClone(doc),
        structuredClone(patch) as Operation[],
        true,
        true,
      ).newDocument;
      expect(applyBoundedPatch(doc, patch, BOUNDS, "p")).toEqual(expected);
      expect(doc).toEqual(before);
    });
  }

  it("names the failing operation and its reason with INVALID_ARGUMENT", () => {
    const cases: [JsonPatchOperation[], string][] = [
      [[{ op: "test", path: "/e", value: false }], "TEST_OPERATION_FAILED"],
      [[{ op: "replace", path: "/zz", value: 1 }], "OPERATION_PATH_UNRESOLVABLE"],
      [[{ op: "add", path: "/zz/y", value: 1 }], "OPERATION_PATH_UNRESOLVABLE"],
      [[{ op: "copy", from: "/zz", path: "/y" }], "OPERATION_FROM_UNRESOLVABLE"],
      [[{ op: "add", path: "/a/01", value: 1 }], "OPERATION_PATH_ILLEGAL_ARRAY_INDEX"],
      [[{ op: "add", path: "/a/4", value: 1 }], "OPERATION_VALUE_OUT_OF_BOUNDS"],
      [[{ op: "add", path: "/y" }], "OPERATION_VALUE_REQUIRED"],
      [[{ op: "add", path: "y", value: 1 }], "OPERATION_PATH_INVALID"],
      [[{ op: "move", from: "/b", path: "/b/c/x" }], "OPERATION_MOVE_INTO_ITSELF"],
      [[{ op: "nope" as "add", path: "/y", value: 1 }], "OPERATION_OP_INVALID"],
    ];
    for (const [patch, reason] of cases) {
      const err = refusal(doc, [{ op: "test", path: "/e", value: true }, ...patch]);
      expect(err.status, reason).toBe("INVALID_ARGUMENT");
      expect(err.message).toMatch(/^p\[1\] \(/);
      expect(err.details).toEqual(expect.objectContaining({ field: "p[1]", reason }));
    }
  });
});

describe("applyBoundedPatch: bounds", () => {
  it("refuses more operations than maxOperations with RESOURCE_EXHAUSTED before applying any", () => {
    const err = refusal(
      {},
      Array.from({ length: 4 }, () => ({ op: "add" as const, path: "/x", value: 1 })),
      {
        ...BOUNDS,
        maxOperations: 3,
      },
    );
    expect(err.status).toBe("RESOURCE_EXHAUSTED");
    expect(err.message).toMatch(/4 operations; the limit is 3 \(--max-patch-operations\)/);
  });

  it("refuses 30 doubling copies at the byte bound, after copying at most about that much", () => {
    const patch = Array.from({ length: 30 }, () => ({ op: "copy" as const, from: "/a", path: "/a/-" }));
    const err = refusal({ a: ["x"] }, patch);
    expect(err.status).toBe("RESOURCE_EXHAUSTED");
    expect(err.message).toMatch(/--max-patch-bytes/);
    // Each copy doubles: the bound of 4 MiB at 16 bytes per value is crossed near copy 2^17 values.
    expect(Number(/^p\[(\d+)\]/.exec(err.message)![1])).toBeLessThan(20);
  });

  it("charges copies, moves and added values against one budget for the whole patch", () => {
    const value = "v".repeat(1000);
    const adds = Array.from({ length: 10 }, (_, i) => ({ op: "add" as const, path: `/k${i}`, value }));
    expect(() => applyBoundedPatch({}, adds, { ...BOUNDS, maxBytes: 12_000 }, "p")).not.toThrow();
    expect(refusal({}, adds, { ...BOUNDS, maxBytes: 9_000 }).status).toBe("RESOURCE_EXHAUSTED");
    const moves = Array.from({ length: 10 }, (_, i) => ({
      op: "move" as const,
      from: i ? `/m${i - 1}` : "/s",
      path: `/m${i}`,
    }));
    expect(refusal({ s: value }, moves, { ...BOUNDS, maxBytes: 9_000 }).status).toBe("RESOURCE_EXHAUSTED");
  });

  it("refuses a write that nests deeper than maxDepth, counting the path and the value", () => {
    expect(refusal({}, [{ op: "add", path: "/a", value: [[[1]]] }], { ...BOUNDS, maxDepth: 3 }).message).toMatch(
      /nested more than 3 levels deep/,
    );
    expect(() =>
      applyBoundedPatch({}, [{ op: "add", path: "/a", value: [[1]] }], { ...BOUNDS, maxDepth: 3 }, "p"),
    ).not.toThrow();
    let deep: unknown = 1;
    for (let i = 0; i < 1900; i++) deep = [deep];
    expect(refusal({}, [{ op: "add", path: "/d", value: deep }]).status).toBe("INVALID_ARGUMENT");
  });

  it("resolves own members only: /constructor and /toString do not exist, __proto__ is refused, no prototype changes", () => {
    expect(refusal({ a: 1 }, [{ op: "copy", from: "/constructor", path: "/f" }]).details?.reason).toBe(
      "OPERATION_FROM_UNRESOLVABLE",
    );
    expect(refusal({ a: 1 }, [{ op: "test", path: "/toString", value: 1 }]).details?.reason).toBe(
      "OPERATION_PATH_UNRESOLVABLE",
    );
    expect(refusal({ a: {} }, [{ op: "add", path: "/a/__proto__", value: { polluted: true } }]).details?.reason).toBe(
      "OPERATION_PATH_PROTOTYPE",
    );
    const result = applyBoundedPatch({}, [{ op: "add", path: "/constructor", value: { prototype: 1 } }], BOUNDS, "p");
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(JSON.stringify(result)).toBe('{"constructor":{"prototype":1}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("refuses values that are not plain JSON", () => {
    for (const value of [() => 1, Number.NaN, new Date(0), { [Symbol.iterator]: 1, f: undefined }, holey()]) {
      expect(refusal({}, [{ op: "add", path: "/v", value }]).details?.reason).toBe("PATCH_VALUE_NOT_JSON");
    }
  });

  it("never quotes the document or a value in its errors", () => {
    const secret = "SECRET-CONVERSATION";
    const doc = { notes: [secret], nested: { text: secret } };
    const patches: JsonPatchOperation[][] = [
      [{ op: "test", path: "/notes/0", value: "guess" }],
      [{ op: "add", path: "/nested/text/x", value: 1 }],
      [{ op: "copy", from: "/nested", path: "/a/b" }],
      [{ op: "add", path: "/notes/9", value: secret }],
      [{ op: "add", path: "/v", value: [secret, () => secret] }],
    ];
    for (const patch of patches) {
      const err = refusal(doc, patch);
      expect(err.message).not.toContain(secret);
      expect(JSON.stringify(err.details)).not.toContain(secret);
    }
  });
});
