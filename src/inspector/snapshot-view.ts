import type { SessionSnapshot } from "../client/browser.js";
import type { SessionInfo } from "../types/session-info.js";
import type { AppContext } from "./app-context.js";
import { artifactCard, jsonBlock, messageCard } from "./content-view.js";
import { h, replaceChildren } from "./element.js";
import { errorBox, formatTime, statusBadge } from "./format.js";
import { liveView } from "./live-view.js";
import { pendingInputsView } from "./pending-inputs-view.js";
import { stateDiffView } from "./state-diff-view.js";

/**
 * One snapshot in detail: status, finish reason, error, usage and times;
 * while pending, its live work (attached stream and Abort) and the inputs
 * that work runs; its messages,
 * its custom state with the diff against its parent's, and its artifacts.
 */
export function snapshotView(ctx: AppContext, session: SessionInfo, snapshotId: string): HTMLElement {
  const root = h("article", { class: "snapshot", "data-snapshot-id": snapshotId }, h("p", {}, "Loading…"));
  // Created once, while the snapshot is pending; stays (with its final status and log) after the work ends.
  let live: HTMLElement | undefined;
  const load = async (): Promise<void> => {
    try {
      const snapshot = await ctx.connection.client.getSnapshot(session.agent, { snapshotId }, { signal: ctx.signal });
      const parent = snapshot.parentId
        ? await ctx.connection.client
            .getSnapshot(session.agent, { snapshotId: snapshot.parentId }, { signal: ctx.signal })
            .catch(() => undefined)
        : undefined;
      render(snapshot, parent);
    } catch (err) {
      replaceChildren(root, errorBox(err));
    }
  };
  const render = (snapshot: SessionSnapshot, parent: SessionSnapshot | undefined): void => {
    const state = snapshot.state;
    // No state yet while pending: the inputs its detached work runs stand in for the messages.
    const inputs = state ? undefined : snapshot.pendingInputs;
    if (snapshot.status === "pending" && live === undefined)
      live = liveView(ctx, session.agent, snapshot.snapshotId, () => setTimeout(() => void load(), 100));
    replaceChildren(
      root,
      h("h3", {}, "Snapshot ", h("code", { class: "snapshot-id" }, snapshot.snapshotId)),
      facts(snapshot),
      live,
      inputs && pendingInputsView(inputs),
      !inputs && h("h4", {}, `Messages (${state?.messages.length ?? 0})`),
      !inputs && h("div", { class: "messages" }, ...(state?.messages ?? []).map(messageCard)),
      h("h4", {}, "Custom state"),
      state
        ? stateDiffView(state.custom, parent?.state ? { custom: parent.state.custom } : undefined)
        : h("p", { class: "muted" }, "No state (pending)."),
      h("h4", {}, `Artifacts (${state?.artifacts.length ?? 0})`),
      h("div", { class: "artifacts" }, ...(state?.artifacts ?? []).map(artifactCard)),
    );
  };
  void load();
  return root;
}

function facts(s: SessionSnapshot): HTMLElement {
  const row = (term: string, value: string | Node): HTMLElement[] => [h("dt", {}, term), h("dd", {}, value)];
  return h(
    "dl",
    { class: "snapshot-facts" },
    ...row("Status", statusBadge(s.status)),
    ...row("Finish reason", s.finishReason ?? "—"),
    ...row("Turn", String(s.turnIndex)),
    ...row("Parent", s.parentId ?? "—"),
    ...row("Created", formatTime(s.createdAt)),
    ...row("Updated", formatTime(s.updatedAt)),
    ...(s.heartbeatAt !== undefined ? row("Heartbeat", formatTime(s.heartbeatAt)) : []),
    ...row(
      "Usage",
      s.usage ? `${s.usage.totalTokens} tokens (${s.usage.inputTokens} in, ${s.usage.outputTokens} out)` : "—",
    ),
    ...(s.error ? row("Error", jsonBlock(s.error.status, s.error)) : []),
    ...(s.edit ? row("Edited", editView(s.edit)) : []),
  );
}

/** Who edited a forked snapshot's parent, and how. */
type SnapshotEdit = NonNullable<SessionSnapshot["edit"]>;

/**
 * The edit a forked snapshot's turn started from (`Snapshot.edit`): who made
 * it, for which tenant, and each operation on the parent's custom state and
 * history, as the caller sent them.
 */
function editView(edit: SnapshotEdit): HTMLElement {
  const operations = (label: string, ops: SnapshotEdit["statePatch"]): HTMLElement | false =>
    ops !== undefined &&
    h(
      "div",
      { class: "edit-ops", "data-target": label },
      h("span", {}, `${label} (${ops.length} operation${ops.length === 1 ? "" : "s"})`),
      h("ol", {}, ...ops.map((op) => h("li", { class: "mono" }, JSON.stringify(op)))),
    );
  return h(
    "div",
    { class: "snapshot-edit" },
    h(
      "p",
      { class: "edit-by" },
      `forked from an edited copy of its parent by ${edit.by}${edit.tenant ? ` (tenant ${edit.tenant})` : ""}`,
    ),
    operations("custom state", edit.statePatch),
    operations("messages", edit.messagesPatch),
  );
}
