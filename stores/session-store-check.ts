import { AgentError } from "../src/errors/agent-error.js";
import type { SessionStore } from "./snapshot-store.js";

/** The methods every {@link SessionStore} must have (the others are optional capabilities). */
export const REQUIRED_STORE_METHODS = [
  "getHead",
  "commit",
  "getRecord",
  "getChain",
  "listRecords",
  "updateRecord",
] as const satisfies readonly (keyof SessionStore)[];

/**
 * Throws INVALID_ARGUMENT naming every required method `store` lacks, so that a
 * store written to another (earlier) contract is refused where it is
 * configured, not at the first turn. `owner` says where it was configured,
 * e.g. `agent "notes"` or `the registry's default store`.
 */
export function assertSessionStore(store: unknown, owner: string): asserts store is SessionStore {
  if (typeof store !== "object" || store === null) {
    throw new AgentError("INVALID_ARGUMENT", `${owner}: the store must be a SessionStore object, got ${typeof store}`);
  }
  const record = store as Record<string, unknown>;
  const missing = REQUIRED_STORE_METHODS.filter((name) => typeof record[name] !== "function");
  if (missing.length === 0) return;
  throw new AgentError(
    "INVALID_ARGUMENT",
    `${owner}: the store does not implement the SessionStore contract: missing ${missing.map((m) => `${m}()`).join(", ")}` +
      ` (a store written for an earlier contract must be updated: see "Writing your own store" in docs/stores.md)`,
    { details: { missing } },
  );
}
