import type { PendingInput, ToolResume } from "../client/browser.js";
import { messageCard } from "./content-view.js";
import { h } from "./element.js";

/**
 * The inputs a pending snapshot's detached work runs (`Snapshot.pending_inputs`),
 * in order, shown while the snapshot has no state yet: each marked completed,
 * running (the first not completed) or queued; a message as its card, a tool
 * resume as one line naming its tools.
 */
export function pendingInputsView(inputs: readonly PendingInput[]): HTMLElement {
  const running = inputs.findIndex((input) => !input.completed);
  return h(
    "section",
    { class: "pending-inputs" },
    h("h4", {}, `Inputs (${inputs.length})`),
    h(
      "ol",
      {},
      ...inputs.map((input, index) => {
        const progress = input.completed ? "completed" : index === running ? "running" : "queued";
        return h(
          "li",
          { class: "pending-input", "data-progress": progress },
          h("span", { class: "input-progress" }, progress),
          input.message
            ? messageCard(input.message, index)
            : h("div", { class: "input-resume" }, resumeLine(input.resume)),
        );
      }),
    ),
  );
}

/** A tool resume in one line: `resume: 2 tool responses (lookup, fetch), 1 restart (search)`. */
function resumeLine(resume: ToolResume | undefined): string {
  const names = (parts: ToolResume["respond"], pick: "toolResponse" | "toolRequest"): string[] =>
    (parts ?? []).map((part) => part[pick]?.name ?? "?");
  const respond = names(resume?.respond, "toolResponse");
  const restart = names(resume?.restart, "toolRequest");
  const counted = (count: number, noun: string, list: string[]): string =>
    `${count} ${noun}${count === 1 ? "" : "s"} (${list.join(", ")})`;
  const pieces = [
    ...(respond.length ? [counted(respond.length, "tool response", respond)] : []),
    ...(restart.length ? [counted(restart.length, "restart", restart)] : []),
  ];
  return `resume: ${pieces.length ? pieces.join(", ") : "nothing"}`;
}
