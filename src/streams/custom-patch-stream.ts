import fastJsonPatch from "fast-json-patch";
import type { JsonPatchOperation } from "../types/agent-io.js";

/**
 * Turns successive client-facing custom states into RFC 6902 patches: the
 * first patch of each turn replaces the whole document (path ""), later ones
 * are incremental diffs (fast-json-patch `compare`). Unchanged states produce
 * no patch.
 */
export class CustomPatchStream {
  private last: unknown;
  private rebased = false;

  /** Starts a turn: the next non-empty change is emitted as a whole-document replace. */
  startTurn(): void {
    this.rebased = false;
  }

  /** The patch that brings a client from the previous state to `next`, or undefined when nothing changed. */
  next(next: unknown): JsonPatchOperation[] | undefined {
    const value = next === undefined ? null : structuredClone(next);
    if (!this.rebased) {
      this.rebased = true;
      this.last = value;
      return [{ op: "replace", path: "", value }];
    }
    const ops = diff(this.last, value);
    this.last = value;
    return ops.length > 0 ? ops : undefined;
  }
}

function isContainer(v: unknown): v is object {
  return typeof v === "object" && v !== null;
}

function diff(from: unknown, to: unknown): JsonPatchOperation[] {
  if (isContainer(from) && isContainer(to) && Array.isArray(from) === Array.isArray(to)) {
    return fastJsonPatch.compare(from, to) as JsonPatchOperation[];
  }
  return JSON.stringify(from) === JSON.stringify(to) ? [] : [{ op: "replace", path: "", value: to }];
}

/** Applies patches to a document and returns the new document (the input is not mutated). */
export function applyCustomPatch<T = unknown>(document: unknown, patch: JsonPatchOperation[]): T {
  // Patch our own copy in place: mutateDocument=false would deep-clone it a second time.
  const result = fastJsonPatch.applyPatch(
    structuredClone(document ?? null),
    patch as fastJsonPatch.Operation[],
    false,
    true,
  );
  return result.newDocument as T;
}
