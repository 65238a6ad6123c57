import type { SessionSnapshot } from "../client/browser.js";

/** One snapshot of a session's tree with the snapshots that continue from it. */
export interface TreeNode {
  snapshot: SessionSnapshot;
  /** Oldest first; two or more: the conversation branched here. */
  children: TreeNode[];
}

/**
 * Arranges a session's snapshots (any order) as a forest by `parentId`: roots
 * are snapshots whose parent is absent or not among them; siblings are ordered
 * oldest first (then by ID, so the order is stable). Every snapshot appears
 * exactly once.
 */
export function buildSnapshotTree(snapshots: readonly SessionSnapshot[]): TreeNode[] {
  const nodes = new Map<string, TreeNode>();
  for (const snapshot of snapshots) nodes.set(snapshot.snapshotId, { snapshot, children: [] });
  const roots: TreeNode[] = [];
  for (const node of nodes.values()) {
    const parent = node.snapshot.parentId !== undefined ? nodes.get(node.snapshot.parentId) : undefined;
    if (parent && parent !== node) parent.children.push(node);
    else roots.push(node);
  }
  const order = (a: TreeNode, b: TreeNode): number =>
    a.snapshot.createdAt - b.snapshot.createdAt || a.snapshot.snapshotId.localeCompare(b.snapshot.snapshotId);
  for (const node of nodes.values()) node.children.sort(order);
  return roots.sort(order);
}

/** How many places the tree branches (snapshots with two or more children). */
export function countBranchPoints(roots: readonly TreeNode[]): number {
  let count = 0;
  const stack = [...roots];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.children.length > 1) count++;
    stack.push(...node.children);
  }
  return count;
}
