import { AgentError } from "../src/errors/agent-error.js";
import type { SessionHead } from "./snapshot-store.js";

/** Throws INVALID_ARGUMENT unless `limit` is an integer ≥ 1 (the argument of `scanHeads`). */
export function checkScanLimit(limit: number): void {
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new AgentError("INVALID_ARGUMENT", `scanHeads: limit must be an integer >= 1 (got ${String(limit)})`);
}

/** Throws INVALID_ARGUMENT unless `after` is undefined or a string (the cursor of `scanHeads`). */
export function checkScanCursor(after: unknown): void {
  if (after !== undefined && typeof after !== "string")
    throw new AgentError("INVALID_ARGUMENT", "scanHeads: afterSessionId must be a session ID string");
}

/**
 * The heads among `candidates` (any order) whose sessionId sorts strictly
 * after `after` (code-unit order), sessionId ascending, at most `limit`
 * (checked with {@link checkScanLimit}). O(n log n) in the candidates.
 */
export function headsAfter(candidates: Iterable<SessionHead>, after: string | undefined, limit: number): SessionHead[] {
  checkScanCursor(after);
  checkScanLimit(limit);
  const out: SessionHead[] = [];
  for (const head of candidates) if (after === undefined || head.sessionId > after) out.push(head);
  return out.sort((a, b) => (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0)).slice(0, limit);
}
