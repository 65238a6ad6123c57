/**
 * The canonical JSON text of a JSON value: object keys sorted (code-unit
 * order) at every depth, `undefined` members left out (as JSON.stringify
 * leaves them out), no whitespace. Two values that any store round-trips
 * through JSON to the same data give the same text, whatever their key order,
 * so it is what copy-store hashes and compares.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? "null";
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : sortKeys(item)));
  if (value === null || typeof value !== "object") return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const member = (value as Record<string, unknown>)[key];
    if (member !== undefined) sorted[key] = sortKeys(member);
  }
  return sorted;
}
