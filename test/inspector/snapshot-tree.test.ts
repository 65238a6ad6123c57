import { describe, expect, it } from "vitest";
import type { SessionSnapshot } from "../../src/client/index.js";
import { buildSnapshotTree, countBranchPoints, type TreeNode } from "../../src/inspector/snapshot-tree.js";

function snap(snapshotId: string, createdAt: number, parentId?: string): SessionSnapshot {
  return {
    snapshotId,
    sessionId: "s",
    turnIndex: 0,
    createdAt,
    updatedAt: createdAt,
    status: "completed",
    ...(parentId ? { parentId } : {}),
  };
}

/** The tree as nested [id, children] pairs. */
function shape(nodes: TreeNode[]): unknown[] {
  return nodes.map((n) => [n.snapshot.snapshotId, shape(n.children)]);
}

describe("buildSnapshotTree", () => {
  it("hangs each snapshot under its parent, siblings oldest first, whatever the input order", () => {
    const roots = buildSnapshotTree([snap("c", 3, "a"), snap("b", 2, "a"), snap("a", 1), snap("d", 4, "b")]);
    expect(shape(roots)).toEqual([
      [
        "a",
        [
          ["b", [["d", []]]],
          ["c", []],
        ],
      ],
    ]);
    expect(countBranchPoints(roots)).toBe(1);
  });

  it("makes a snapshot whose parent is not among them a root, so none is lost", () => {
    const roots = buildSnapshotTree([snap("b", 2, "missing"), snap("a", 1)]);
    expect(shape(roots)).toEqual([
      ["a", []],
      ["b", []],
    ]);
    expect(countBranchPoints(roots)).toBe(0);
  });
});
