import type { AgentStreamChunk } from "../client/browser.js";
import type { AppContext } from "./app-context.js";
import { append, h, replaceChildren } from "./element.js";
import { describeError, statusBadge } from "./format.js";

/**
 * The live work of a pending (detached) snapshot: its stream attached
 * (AttachInvocation: the chunks recorded since detach, then live ones as they
 * arrive), its status as it changes (WatchSnapshot), and an Abort button.
 * Calls `onEnded` once the status is terminal, so the page can show the
 * finished snapshot. Both streams stop when the view is left.
 */
export function liveView(ctx: AppContext, agent: string, snapshotId: string, onEnded: () => void): HTMLElement {
  const status = h("span", { class: "live-status" }, statusBadge("pending"));
  const log = h("div", { class: "chunk-log", "aria-live": "polite" });
  const note = h("p", { class: "live-note" });
  const abort = h("button", { type: "button", class: "danger abort" }, "Abort");
  abort.addEventListener("click", () => {
    abort.disabled = true;
    ctx.connection.client
      .abort(agent, snapshotId, { signal: ctx.signal })
      .then((result) => replaceChildren(note, `Abort answered: ${result}`))
      .catch((err: unknown) => {
        abort.disabled = false;
        replaceChildren(note, describeError(err));
      });
  });

  void (async () => {
    try {
      for await (const s of ctx.connection.client.watchSnapshot(agent, snapshotId, { signal: ctx.signal })) {
        replaceChildren(status, statusBadge(s));
        if (s !== "pending") {
          abort.disabled = true;
          onEnded();
        }
      }
    } catch (err) {
      if (!ctx.signal.aborted) replaceChildren(note, describeError(err));
    }
  })();

  void (async () => {
    const run = ctx.connection.client.attach(agent, snapshotId, { signal: ctx.signal });
    try {
      for await (const chunk of run) append(log, chunkLine(chunk));
      const output = await run;
      append(log, h("div", { class: "chunk output" }, `output: finish ${output.finishReason}`));
    } catch (err) {
      if (!ctx.signal.aborted) append(log, h("div", { class: "chunk error" }, describeError(err)));
    }
  })();

  return h(
    "section",
    { class: "live", "aria-label": "Live work" },
    h("h3", {}, "Live work ", status),
    abort,
    note,
    log,
  );
}

/** One streamed chunk as a line of text: its sequence and what it carries. */
export function chunkLine(chunk: AgentStreamChunk): HTMLElement {
  const seq = chunk.sequence !== undefined ? `#${chunk.sequence} ` : "";
  let kind = "chunk";
  let body = "";
  if (chunk.modelChunk) {
    kind = "model";
    body = chunk.modelChunk.content.map((p) => p.text ?? p.reasoning ?? JSON.stringify(p)).join("");
  } else if (chunk.customPatch) {
    kind = "patch";
    body = `custom patch ${JSON.stringify(chunk.customPatch)}`;
  } else if (chunk.artifact) {
    kind = "artifact";
    body = `artifact ${chunk.artifact.name ?? "(unnamed)"}`;
  } else if (chunk.turnEnd) {
    kind = "turn-end";
    const t = chunk.turnEnd;
    body =
      `turn end: turn ${t.turnIndex}, finish ${t.finishReason}` +
      (t.snapshotId ? `, snapshot ${t.snapshotId}` : "") +
      (t.usage ? `, ${t.usage.totalTokens} tokens` : "");
  } else if (chunk.takeover) {
    kind = "takeover";
    body = `taken over by ${JSON.stringify(chunk.takeover)}`;
  }
  return h("div", { class: "chunk", "data-kind": kind }, seq, body);
}
