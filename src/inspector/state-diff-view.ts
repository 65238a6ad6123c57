import { h } from "./element.js";
import { diffJson, prettyJson, type JsonChange } from "./json-diff.js";

/**
 * A snapshot's custom state as JSON, and the changes from its parent's
 * (`parent` undefined: no parent, so no diff) as a list of
 * added/removed/changed paths with their values.
 */
export function stateDiffView(custom: unknown, parent: { custom: unknown } | undefined): HTMLElement {
  const changes = parent ? diffJson(parent.custom, custom) : [];
  return h(
    "div",
    { class: "custom-state" },
    h("pre", { class: "json-state" }, prettyJson(custom)),
    h("h4", {}, "Changes from the parent snapshot"),
    parent === undefined
      ? h("p", { class: "muted" }, "No parent snapshot: this is where the session starts.")
      : changes.length === 0
        ? h("p", { class: "muted diff-none" }, "Custom state unchanged.")
        : h("ul", { class: "diff" }, ...changes.map(changeItem)),
  );
}

function changeItem(change: JsonChange): HTMLElement {
  const show = (v: unknown): string => JSON.stringify(v) ?? "undefined";
  return h(
    "li",
    { "data-kind": change.kind },
    h("code", { class: "diff-path" }, change.path === "" ? "(whole state)" : change.path),
    " ",
    h("span", { class: "diff-kind" }, change.kind),
    change.kind !== "added" && h("del", {}, show(change.before)),
    change.kind === "changed" && " → ",
    change.kind !== "removed" && h("ins", {}, show(change.after)),
  );
}
