import { AgentError } from "../../errors/agent-error.js";
import type { JsonPatchOperation } from "../../types/agent-io.js";
import { copyJsonWithin, JsonBudgetError, setOwn, type JsonBudget } from "./json-budget.js";

/** The bounds one patch is applied within (see `InputLimits`). */
export interface PatchBounds {
  maxOperations: number;
  /** Bytes the patch may write (added, replaced, copied, moved values; shifted array elements). */
  maxBytes: number;
  /** Deepest nesting the patched document may get where the patch writes. */
  maxDepth: number;
}

/**
 * `document` with the RFC 6902 `patch` applied, within `bounds` (both
 * arguments left untouched). Paths resolve through own properties only (a
 * `/constructor` or `/toString` of an object without that key does not
 * exist), writes are own data properties, and every written value must be
 * plain JSON. Throws AgentError, naming the operation
 * (`<field>[i] (op "path")`) and never quoting a value of the document or
 * the patch: RESOURCE_EXHAUSTED for more than `maxOperations` operations
 * (before anything is applied) or at the operation that would write more
 * than `maxBytes` (before its value is copied); INVALID_ARGUMENT for an
 * operation that does not apply, a value that is not plain JSON, or a write
 * that would nest deeper than `maxDepth`.
 */
export function applyBoundedPatch(
  document: unknown,
  patch: readonly JsonPatchOperation[],
  bounds: PatchBounds,
  field: string,
): unknown {
  if (patch.length > bounds.maxOperations) {
    throw new AgentError(
      "RESOURCE_EXHAUSTED",
      `${field} has ${patch.length} operations; the limit is ${bounds.maxOperations} (--max-patch-operations): split the edit over several forks`,
      { details: { field, maxPatchOperations: bounds.maxOperations } },
    );
  }
  const state: PatchState = {
    root: structuredClone(document),
    budget: { remaining: bounds.maxBytes },
    maxDepth: bounds.maxDepth,
  };
  patch.forEach((op, index) => {
    try {
      applyOperation(state, op);
    } catch (err) {
      throw operationError(err, op, index, field, bounds);
    }
  });
  return state.root;
}

interface PatchState {
  root: unknown;
  budget: JsonBudget;
  maxDepth: number;
}

/** An operation that does not apply; `reason` is one of {@link REASONS}' keys. */
class PatchFault extends Error {
  constructor(readonly reason: keyof typeof REASONS) {
    super(REASONS[reason]);
  }
}

/** What each refusal means, for the caller (never quoting a value). */
const REASONS = {
  TEST_OPERATION_FAILED: 'the "test" failed: the value at the path differs',
  OPERATION_PATH_UNRESOLVABLE: "the path does not exist",
  OPERATION_FROM_UNRESOLVABLE: '"from" names a path that does not exist',
  OPERATION_PATH_ILLEGAL_ARRAY_INDEX: "the path has an invalid array index",
  OPERATION_VALUE_OUT_OF_BOUNDS: "the array index is out of bounds",
  OPERATION_VALUE_REQUIRED: "the operation needs a value",
  OPERATION_PATH_INVALID: "the path is not a JSON Pointer",
  OPERATION_FROM_REQUIRED: 'the operation needs "from", a JSON Pointer',
  OPERATION_MOVE_INTO_ITSELF: '"from" contains the path: a value cannot move into itself',
  OPERATION_OP_INVALID: "unknown op (expected add, remove, replace, move, copy or test)",
  OPERATION_PATH_PROTOTYPE: 'the path names "__proto__", which a JSON document cannot hold',
} as const;

function applyOperation(state: PatchState, op: JsonPatchOperation): void {
  const path = pointer(op.path, "OPERATION_PATH_INVALID");
  switch (op.op) {
    case "add":
    case "replace": {
      const value = writable(state, op, path);
      if (op.op === "add") add(state, path, value);
      else replace(state, path, value);
      return;
    }
    case "remove":
      remove(state, path);
      return;
    case "copy":
    case "move": {
      const from = pointer(op.from, "OPERATION_FROM_REQUIRED");
      const source = get(state.root, from, "OPERATION_FROM_UNRESOLVABLE");
      if (op.op === "move" && from.length < path.length && from.every((t, i) => t === path[i]))
        throw new PatchFault("OPERATION_MOVE_INTO_ITSELF");
      const value = copyJsonWithin(source, state.budget, depthLeft(state, path));
      if (op.op === "move") remove(state, from);
      add(state, path, value);
      return;
    }
    case "test": {
      if (!("value" in op) || op.value === undefined) throw new PatchFault("OPERATION_VALUE_REQUIRED");
      if (!jsonEqual(get(state.root, path, "OPERATION_PATH_UNRESOLVABLE"), op.value))
        throw new PatchFault("TEST_OPERATION_FAILED");
      return;
    }
    default:
      throw new PatchFault("OPERATION_OP_INVALID");
  }
}

/** `op.value` copied within the budget and the depth left at `path`. */
function writable(state: PatchState, op: JsonPatchOperation, path: string[]): unknown {
  if (!("value" in op) || op.value === undefined) throw new PatchFault("OPERATION_VALUE_REQUIRED");
  return copyJsonWithin(op.value, state.budget, depthLeft(state, path));
}

/** Levels a value written at `path` may still have. */
function depthLeft(state: PatchState, path: string[]): number {
  const left = state.maxDepth - path.length;
  if (left < 0) throw new JsonBudgetError("depth");
  return left;
}

/** The tokens of a JSON Pointer (RFC 6901); `fault` when it is not one. */
function pointer(text: unknown, fault: keyof typeof REASONS): string[] {
  if (typeof text !== "string") throw new PatchFault(fault);
  if (text === "") return [];
  if (!text.startsWith("/")) throw new PatchFault(fault);
  return text
    .slice(1)
    .split("/")
    .map((token) => {
      if (/~[^01]|~$/.test(token)) throw new PatchFault(fault);
      const unescaped = token.replaceAll("~1", "/").replaceAll("~0", "~");
      if (unescaped === "__proto__") throw new PatchFault("OPERATION_PATH_PROTOTYPE");
      return unescaped;
    });
}

const ABSENT = Symbol("absent");

/** The value at `path` through own properties; `fault` when it does not exist. */
function get(root: unknown, path: string[], fault: keyof typeof REASONS): unknown {
  let node = root;
  for (const token of path) {
    node = child(node, token);
    if (node === ABSENT) throw new PatchFault(fault);
  }
  return node;
}

function child(node: unknown, token: string): unknown {
  if (Array.isArray(node)) {
    if (!isIndex(token)) return ABSENT;
    const i = Number(token);
    return i < node.length ? node[i] : ABSENT;
  }
  if (node !== null && typeof node === "object" && Object.hasOwn(node, token))
    return (node as Record<string, unknown>)[token];
  return ABSENT;
}

/** The container holding the last token of `path` (which must not be the root). */
function parentOf(state: PatchState, path: string[]): unknown[] | Record<string, unknown> {
  const parent = get(state.root, path.slice(0, -1), "OPERATION_PATH_UNRESOLVABLE");
  if (parent === null || typeof parent !== "object") throw new PatchFault("OPERATION_PATH_UNRESOLVABLE");
  return parent as unknown[] | Record<string, unknown>;
}

function add(state: PatchState, path: string[], value: unknown): void {
  if (path.length === 0) {
    state.root = value;
    return;
  }
  const parent = parentOf(state, path);
  const key = path.at(-1)!;
  if (!Array.isArray(parent)) {
    setOwn(parent, key, value);
    return;
  }
  if (key === "-") {
    parent.push(value);
    return;
  }
  const i = arrayIndex(key);
  if (i > parent.length) throw new PatchFault("OPERATION_VALUE_OUT_OF_BOUNDS");
  shift(state, parent.length - i);
  parent.splice(i, 0, value);
}

function replace(state: PatchState, path: string[], value: unknown): void {
  if (path.length === 0) {
    state.root = value;
    return;
  }
  const parent = parentOf(state, path);
  const key = path.at(-1)!;
  if (Array.isArray(parent)) {
    const i = arrayIndex(key);
    if (i >= parent.length) throw new PatchFault("OPERATION_VALUE_OUT_OF_BOUNDS");
    parent[i] = value;
  } else {
    if (!Object.hasOwn(parent, key)) throw new PatchFault("OPERATION_PATH_UNRESOLVABLE");
    setOwn(parent, key, value);
  }
}

function remove(state: PatchState, path: string[]): void {
  if (path.length === 0) {
    state.root = null;
    return;
  }
  const parent = parentOf(state, path);
  const key = path.at(-1)!;
  if (Array.isArray(parent)) {
    const i = arrayIndex(key);
    if (i >= parent.length) throw new PatchFault("OPERATION_VALUE_OUT_OF_BOUNDS");
    shift(state, parent.length - i - 1);
    parent.splice(i, 1);
  } else {
    if (!Object.hasOwn(parent, key)) throw new PatchFault("OPERATION_PATH_UNRESOLVABLE");
    delete parent[key];
  }
}

/** Charges the elements an insertion or removal shifts (one byte each). */
function shift(state: PatchState, elements: number): void {
  state.budget.remaining -= elements;
  if (state.budget.remaining < 0) throw new JsonBudgetError("bytes");
}

function isIndex(token: string): boolean {
  return /^(0|[1-9][0-9]{0,15})$/.test(token);
}

function arrayIndex(token: string): number {
  if (!isIndex(token)) throw new PatchFault("OPERATION_PATH_ILLEGAL_ARRAY_INDEX");
  return Number(token);
}

/** Deep equality of JSON values (own keys; key order ignored). */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const list = b as unknown[];
    return a.length === list.length && a.every((v, i) => jsonEqual(v, list[i]));
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every(
    (k) => Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}

/** The AgentError for operation `index` failing with `err` (never quoting a value). */
function operationError(
  err: unknown,
  op: JsonPatchOperation,
  index: number,
  field: string,
  bounds: PatchBounds,
): AgentError {
  const at = `${field}[${index}]`;
  const what = `${at} (${String(op.op)} "${String(op.path).slice(0, 200)}")`;
  if (err instanceof JsonBudgetError) {
    switch (err.failure) {
      case "bytes":
        return new AgentError(
          "RESOURCE_EXHAUSTED",
          `${what}: the patch would write more than ${bounds.maxBytes} bytes (--max-patch-bytes, counting every value it adds, replaces, copies or moves); nothing was applied`,
          { details: { field: at, reason: "PATCH_BYTES_EXCEEDED", maxPatchBytes: bounds.maxBytes } },
        );
      case "depth":
        return new AgentError(
          "INVALID_ARGUMENT",
          `${what}: the result would be nested more than ${bounds.maxDepth} levels deep (the limit for free-form JSON)`,
          { details: { field: at, reason: "PATCH_DEPTH_EXCEEDED", maxDepth: bounds.maxDepth } },
        );
      default:
        return new AgentError(
          "INVALID_ARGUMENT",
          `${what}: the value is not plain JSON (objects, arrays, strings, finite numbers, booleans, null; no "__proto__" key)`,
          { details: { field: at, reason: "PATCH_VALUE_NOT_JSON" } },
        );
    }
  }
  if (err instanceof PatchFault)
    return new AgentError("INVALID_ARGUMENT", `${what}: ${err.message}`, {
      details: { field: at, reason: err.reason },
    });
  // A RangeError (stack) or anything else unexpected: its message could quote the document.
  return new AgentError("INVALID_ARGUMENT", `${what}: the operation could not be applied`, {
    details: { field: at, reason: "OPERATION_FAILED" },
  });
}
