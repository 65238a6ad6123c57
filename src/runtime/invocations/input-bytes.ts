import type { AgentInput } from "../../types/agent-io.js";

/** Sizes already measured, so an input waiting in several lists is measured once. */
const measured = new WeakMap<object, number>();

/**
 * The size of an input's message and resume (as JSON: characters of
 * strings and keys, bytes of media, a few bytes per number, boolean, null
 * and separator), what holding it costs the server. Measured once per
 * input object; stops descending below 64 levels (deeper values are
 * refused elsewhere) and charges them a flat 16 bytes.
 */
export function inputBytes(input: AgentInput): number {
  const known = measured.get(input);
  if (known !== undefined) return known;
  const bytes = sizeOf(input.message, 0) + sizeOf(input.resume, 0);
  measured.set(input, bytes);
  return bytes;
}

function sizeOf(value: unknown, depth: number): number {
  switch (typeof value) {
    case "string":
      return value.length + 2;
    case "number":
    case "bigint":
      return 8;
    case "boolean":
      return 5;
    case "object":
      break;
    default:
      return 0;
  }
  if (value === null) return 4;
  if (depth > 64) return 16;
  if (ArrayBuffer.isView(value)) return value.byteLength;
  if (value instanceof ArrayBuffer) return value.byteLength;
  let bytes = 2;
  if (Array.isArray(value)) {
    for (const item of value) bytes += 1 + sizeOf(item, depth + 1);
    return bytes;
  }
  for (const [key, item] of Object.entries(value)) bytes += key.length + 4 + sizeOf(item, depth + 1);
  return bytes;
}
