/**
 * Plain-JSON copies made under a byte budget and a depth bound: what a
 * patch writes is measured while it is copied, so an amplifying patch is
 * refused at the bound instead of after the copy was made.
 */

/** Why a value could not be copied within its bounds. */
export type JsonBudgetFailure =
  /** The copy would exceed the remaining byte budget. */
  | "bytes"
  /** The copy would nest deeper than allowed. */
  | "depth"
  /** Not plain JSON: a function, undefined, a symbol, a bigint, a non-finite number, a class instance, a `__proto__` key. */
  | "not-json";

/** Bytes charged per value and per array slot or object member (about what the engine allocates for each). */
export const NODE_BYTES = 16;

/** Thrown by {@link copyJsonWithin}; carries what ran out (never the value). */
export class JsonBudgetError extends Error {
  constructor(readonly failure: JsonBudgetFailure) {
    super(`JSON copy refused: ${failure}`);
    this.name = "JsonBudgetError";
  }
}

/** The budget shared by every copy of one patch: bytes still allowed. */
export interface JsonBudget {
  remaining: number;
}

/**
 * A deep copy of `value` as plain JSON (plain objects with own enumerable
 * string keys, arrays, strings, finite numbers, booleans, null), charging
 * what the copy holds in memory to `budget`: {@link NODE_BYTES} per value
 * (scalar, array or object) and per array slot or object member, plus the
 * characters of strings and keys. A copy of many small values (the nested
 * arrays of a doubling copy) is charged its allocations, not its short JSON
 * text, so the budget bounds the copying work as well as the result. `depthLeft` is how many more levels of nesting the copy may
 * have (`{}` and `[]` are 1, scalars 0). Throws {@link JsonBudgetError}
 * as soon as the budget or the depth runs out, having copied at most the
 * budget's worth; never recurses deeper than `depthLeft`.
 */
export function copyJsonWithin(value: unknown, budget: JsonBudget, depthLeft: number): unknown {
  switch (typeof value) {
    case "string":
      charge(budget, NODE_BYTES + value.length);
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new JsonBudgetError("not-json");
      charge(budget, NODE_BYTES);
      return value;
    case "boolean":
      charge(budget, NODE_BYTES);
      return value;
    case "object":
      break;
    default:
      throw new JsonBudgetError("not-json");
  }
  if (value === null) {
    charge(budget, NODE_BYTES);
    return null;
  }
  if (depthLeft < 1) throw new JsonBudgetError("depth");
  charge(budget, NODE_BYTES);
  if (Array.isArray(value)) {
    const copy: unknown[] = [];
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) throw new JsonBudgetError("not-json");
      charge(budget, NODE_BYTES);
      copy.push(copyJsonWithin(value[i], budget, depthLeft - 1));
    }
    return copy;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) throw new JsonBudgetError("not-json");
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (key === "__proto__") throw new JsonBudgetError("not-json");
    charge(budget, NODE_BYTES + key.length);
    setOwn(copy, key, copyJsonWithin((value as Record<string, unknown>)[key], budget, depthLeft - 1));
  }
  return copy;
}

/**
 * Sets `obj[key]` as an own data property, whatever the key (a `constructor`
 * or `toString` key is data, never a write through the prototype).
 */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

function charge(budget: JsonBudget, bytes: number): void {
  budget.remaining -= bytes;
  if (budget.remaining < 0) throw new JsonBudgetError("bytes");
}
