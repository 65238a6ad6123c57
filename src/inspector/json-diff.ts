/** One difference between two JSON values, at a JSON Pointer-like path. */
export interface JsonChange {
  /** `/tasks/0/done`; `` (empty) for the whole value. */
  path: string;
  kind: "added" | "removed" | "changed";
  before?: unknown;
  after?: unknown;
}

/**
 * The differences from `before` to `after`: objects are compared key by key,
 * arrays index by index, anything else by value; a value that is the same on
 * both sides yields nothing. Paths escape `~` and `/` as RFC 6901 does.
 */
export function diffJson(before: unknown, after: unknown, path = ""): JsonChange[] {
  if (before === undefined && after === undefined) return [];
  if (before === undefined) return [{ path, kind: "added", after }];
  if (after === undefined) return [{ path, kind: "removed", before }];
  if (Array.isArray(before) && Array.isArray(after)) {
    const changes: JsonChange[] = [];
    for (let i = 0; i < Math.max(before.length, after.length); i++)
      changes.push(...diffJson(before[i], after[i], `${path}/${i}`));
    return changes;
  }
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((key) => diffJson(before[key], after[key], `${path}/${escapeKey(key)}`));
  }
  return sameJson(before, after) ? [] : [{ path, kind: "changed", before, after }];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function escapeKey(key: string): string {
  return key.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** `value` as indented JSON (`undefined` reads "(none)"). */
export function prettyJson(value: unknown): string {
  return value === undefined ? "(none)" : JSON.stringify(value, null, 2);
}
