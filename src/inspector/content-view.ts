import type { Artifact, Message, Part } from "../client/browser.js";
import { h, type Child } from "./element.js";
import { prettyJson } from "./json-diff.js";

/**
 * A message as a card: its role, then each part — text, reasoning, tool
 * request (name and input; an interrupted one marked as waiting for the
 * client, or resolved), tool response (name and output), media (its URL,
 * as text: nothing is fetched), data, custom — and its metadata. Every value
 * is shown as text.
 */
export function messageCard(message: Message, index: number): HTMLElement {
  return h(
    "article",
    { class: "message", "data-role": message.role, "data-index": index },
    h("header", {}, h("span", { class: "role" }, message.role)),
    ...message.content.map(partView),
    message.metadata !== undefined && jsonBlock("metadata", message.metadata),
  );
}

/** One part of a message or artifact. */
export function partView(part: Part): HTMLElement {
  const children: Child[] = [];
  if (part.text !== undefined) children.push(h("div", { class: "part-text" }, part.text));
  if (part.reasoning !== undefined) children.push(h("div", { class: "part-reasoning" }, part.reasoning));
  if (part.toolRequest !== undefined) {
    const { name, ref, input } = part.toolRequest;
    children.push(
      h("div", { class: "part-tool-request" }, `tool request → ${name}${ref ? ` (${ref})` : ""}`),
      jsonBlock("input", input),
    );
    // The keys src/tools/interrupts.ts marks an interrupted request with (INTERRUPT_KEY, RESOLVED_INTERRUPT_KEY).
    const interrupt = part.metadata?.["interrupt"];
    const resolved = part.metadata?.["resolvedInterrupt"];
    if (interrupt !== undefined)
      children.push(h("div", { class: "part-interrupt" }, "interrupt: waiting for the client's resume"));
    else if (resolved !== undefined)
      children.push(h("div", { class: "part-interrupt resolved" }, "interrupt: resolved by a resume"));
    const call = toolCallLine(part.metadata?.["toolCall"]);
    if (call) children.push(h("div", { class: "part-tool-call" }, call));
  }
  if (part.toolResponse !== undefined) {
    const { name, ref, output } = part.toolResponse;
    children.push(
      h("div", { class: "part-tool-response" }, `tool response ← ${name}${ref ? ` (${ref})` : ""}`),
      jsonBlock("output", output),
    );
  }
  if (part.media !== undefined)
    children.push(h("div", { class: "part-media" }, `media ${part.media.contentType ?? ""} ${part.media.url}`));
  if (part.data !== undefined) children.push(jsonBlock("data", part.data));
  if (part.custom !== undefined) children.push(jsonBlock("custom", part.custom));
  if (part.metadata !== undefined) children.push(jsonBlock("part metadata", part.metadata));
  return h("div", { class: "part" }, ...children);
}

/**
 * A tool request's journal entry (`metadata.toolCall`, see
 * src/tools/tool-call-journal.ts) as one line: `tool call <key> · ran in 12 ms`,
 * `· replayed from the journal`, or `· started, no result journaled`.
 */
function toolCallLine(entry: unknown): string | undefined {
  if (typeof entry !== "object" || entry === null) return undefined;
  const { key, outcome, startedAt, endedAt } = entry as Record<string, unknown>;
  if (typeof key !== "string") return undefined;
  const took = typeof startedAt === "number" && typeof endedAt === "number" ? ` in ${endedAt - startedAt} ms` : "";
  if (outcome === "ran") return `tool call ${key} · ran${took}`;
  if (outcome === "replayed") return `tool call ${key} · replayed from the journal`;
  return `tool call ${key} · started, no result journaled`;
}

/** An artifact: its name, parts and metadata. */
export function artifactCard(artifact: Artifact): HTMLElement {
  return h(
    "article",
    { class: "artifact" },
    h("header", {}, artifact.name ?? "(unnamed artifact)"),
    ...artifact.parts.map(partView),
    artifact.metadata !== undefined && jsonBlock("metadata", artifact.metadata),
  );
}

/** A labelled `<pre>` of indented JSON. */
export function jsonBlock(label: string, value: unknown): HTMLElement {
  return h("div", { class: "json" }, h("span", { class: "json-label" }, label), h("pre", {}, prettyJson(value)));
}
