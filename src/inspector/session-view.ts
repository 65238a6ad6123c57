import type { SessionSnapshot } from "../client/browser.js";
import type { SessionInfo } from "../types/session-info.js";
import type { AppContext } from "./app-context.js";
import { h, replaceChildren } from "./element.js";
import { errorBox, formatDuration, formatLabels, formatTime, statusBadge } from "./format.js";
import { buildSnapshotTree, countBranchPoints, type TreeNode } from "./snapshot-tree.js";
import { snapshotView } from "./snapshot-view.js";

/** Snapshots read per ListSnapshots page (the server's maximum). */
const SNAPSHOT_PAGE_SIZE = 1000;

/**
 * A session: its summary, its snapshots drawn as a tree (branches visible,
 * the head marked, each linking to `/inspector/sessions/<id>/snapshots/<id>`)
 * and the selected snapshot (`snapshotId`, else the head) in detail.
 */
export function sessionView(ctx: AppContext, sessionId: string, snapshotId: string | undefined): HTMLElement {
  const root = h("section", { class: "session", "aria-label": "Session" }, h("p", { class: "muted" }, "Loading…"));
  void (async () => {
    try {
      const session = await ctx.connection.client.getSession(sessionId, { signal: ctx.signal });
      const snapshots = await allSnapshots(ctx, session);
      const selected = snapshotId ?? session.headSnapshotId;
      const head = h("div", { class: "session-head" }, summary(ctx, session));
      const tree = h("div", { class: "tree-slot" }, treePanel(ctx, session, snapshots, selected));
      replaceChildren(
        root,
        head,
        h(
          "div",
          { class: "session-body" },
          tree,
          h(
            "div",
            { class: "snapshot-panel" },
            selected
              ? snapshotView(ctx, session, selected)
              : h("p", { class: "muted" }, "This session has no snapshot yet."),
          ),
        ),
      );
      if (session.headStatus === "pending" && session.headSnapshotId)
        refreshWhenHeadEnds(ctx, session, session.headSnapshotId, async () => {
          const now = await ctx.connection.client.getSession(sessionId, { signal: ctx.signal });
          replaceChildren(head, summary(ctx, now));
          replaceChildren(tree, treePanel(ctx, now, await allSnapshots(ctx, now), selected));
        });
    } catch (err) {
      replaceChildren(root, h("h2", {}, "Session ", h("code", {}, sessionId)), errorBox(err));
    }
  })();
  return root;
}

/**
 * Watches the session's pending head (WatchSnapshot) and calls `refresh` once
 * it reaches a terminal status, so the summary and the tree show how the
 * detached work ended without a reload. Stops when the view is left.
 */
function refreshWhenHeadEnds(
  ctx: AppContext,
  session: SessionInfo,
  headSnapshotId: string,
  refresh: () => Promise<void>,
): void {
  void (async () => {
    try {
      for await (const status of ctx.connection.client.watchSnapshot(session.agent, headSnapshotId, {
        signal: ctx.signal,
      }))
        if (status !== "pending") {
          await refresh();
          return;
        }
    } catch {
      // the view was left, or the watch failed: the page still shows the last state it read
    }
  })();
}

/** Every snapshot of the session, page after page. */
async function allSnapshots(ctx: AppContext, session: SessionInfo): Promise<SessionSnapshot[]> {
  const snapshots: SessionSnapshot[] = [];
  let pageToken: string | undefined;
  do {
    const page = await ctx.connection.client.listSnapshots(
      session.agent,
      session.sessionId,
      { pageSize: SNAPSHOT_PAGE_SIZE, ...(pageToken ? { pageToken } : {}) },
      { signal: ctx.signal },
    );
    snapshots.push(...page.snapshots);
    pageToken = page.nextPageToken;
  } while (pageToken);
  return snapshots;
}

function summary(ctx: AppContext, session: SessionInfo): HTMLElement {
  const row = (term: string, value: string | Node): HTMLElement[] => [h("dt", {}, term), h("dd", {}, value)];
  return h(
    "header",
    { class: "session-summary" },
    h("h2", {}, "Session ", h("code", { class: "session-id" }, session.sessionId)),
    h(
      "dl",
      {},
      ...row("Agent", session.agent),
      ...row("Turns", String(session.turnCount)),
      ...row("Head", statusBadge(session.headStatus)),
      ...row("Created", formatTime(session.createdAt)),
      ...row("Updated", formatTime(session.updatedAt)),
      ...row("Expires", formatTime(session.expiresAt)),
      ...row("TTL", formatDuration(session.ttlMs)),
      ...row("Labels", formatLabels(session.labels) || "—"),
      ...row(
        "Usage",
        session.usage
          ? `${session.usage.totalTokens} tokens (${session.usage.inputTokens} in, ${session.usage.outputTokens} out)`
          : "—",
      ),
    ),
    h(
      "p",
      {},
      ctx.link(
        { view: "chat", agent: session.agent, sessionId: session.sessionId },
        "Continue this session in the chat →",
      ),
    ),
  );
}

function treePanel(
  ctx: AppContext,
  session: SessionInfo,
  snapshots: SessionSnapshot[],
  selected: string | undefined,
): HTMLElement {
  const roots = buildSnapshotTree(snapshots);
  const branches = countBranchPoints(roots);
  const node = (n: TreeNode): HTMLElement => {
    const s = n.snapshot;
    const isHead = s.snapshotId === session.headSnapshotId;
    return h(
      "li",
      {
        "data-snapshot-id": s.snapshotId,
        class: n.children.length > 1 ? "branch-point" : undefined,
        "aria-current": s.snapshotId === selected ? "true" : undefined,
      },
      ctx.link(
        { view: "session", sessionId: session.sessionId, snapshotId: s.snapshotId },
        `turn ${s.turnIndex} · ${s.snapshotId}`,
        { class: "snapshot-link mono" },
      ),
      " ",
      statusBadge(s.status),
      isHead && h("span", { class: "head-mark" }, "HEAD"),
      n.children.length > 1 && h("span", { class: "branch-mark" }, `${n.children.length} branches`),
      n.children.length > 0 && h("ul", {}, ...n.children.map(node)),
    );
  };
  return h(
    "nav",
    { class: "tree-panel", "aria-label": "Snapshots" },
    h(
      "h3",
      {},
      `Snapshots (${snapshots.length}${branches > 0 ? `, ${branches} branch point${branches > 1 ? "s" : ""}` : ""})`,
    ),
    h("ul", { class: "snapshot-tree" }, ...roots.map(node)),
  );
}
