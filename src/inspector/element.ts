/**
 * The inspector's only way to build DOM: elements with attributes and
 * children, where every string child becomes a Text node. Nothing here sets
 * `innerHTML` or any other HTML-parsing sink, so content from the API
 * (messages, labels, state) is always shown as text, never interpreted.
 */

/** A child of {@link h}: a node, a string (a Text node), or nothing (skipped). */
export type Child = Node | string | number | false | null | undefined;

/** Attributes of {@link h}: strings set as attributes, functions as event listeners (`onclick`, `oninput`...). */
export type Attributes = Record<string, string | number | boolean | undefined | ((event: Event) => void)>;

/**
 * Creates `<tag>` with `attrs` (a `false`/`undefined` value is left out, `true`
 * sets an empty attribute, `on<event>` adds a listener) and `children` (strings
 * as Text nodes).
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, ...children);
  return el;
}

/** Appends `children` to `parent` (strings and numbers as Text nodes). */
export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    parent.appendChild(typeof child === "string" || typeof child === "number" ? text(String(child)) : child);
  }
}

/** Replaces every child of `parent` with `children`. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** A Text node: the safe way to show any string. */
export function text(value: string): Text {
  return document.createTextNode(value);
}
