import { AgentError } from "../src/errors/agent-error.js";
import type { SessionStore, StoreCallContext } from "./snapshot-store.js";

/** Which turn's tool calls: the session and the request ID of the turn's input. */
export interface ToolJournalScope {
  sessionId: string;
  requestId: string;
}

/**
 * One tool call of a turn that has not committed yet, as journaled: started
 * (a `never-repeat` call, before it runs) or completed (`endedAt` and
 * `output` set, as soon as its result came back).
 */
export interface JournaledToolCall {
  /** The call's idempotency key (unique within its turn). */
  key: string;
  tool: string;
  /** When the call started (epoch ms). */
  startedAt: number;
  /** When its result was journaled (epoch ms); absent while only its start is. */
  endedAt?: number;
  /** Its result (JSON); present exactly when `endedAt` is. */
  output?: unknown;
}

/** How long journaled calls of a turn that never committed are kept: the request-ID window's 24 h. */
export const TOOL_JOURNAL_TTL_MS = 24 * 3600 * 1000;

/** Most calls one turn's journal holds (10 rounds by default × a model's parallel calls, with room). */
export const MAX_JOURNALED_CALLS = 1_000;

/** Largest journaled result, as JSON (the same bound as a chunk's). */
export const MAX_JOURNALED_OUTPUT_BYTES = 4 * 1024 * 1024;

/**
 * Optional capability: the tool calls of a turn that has not committed,
 * kept under (session, request ID) so that a client's retry of that turn
 * (same request ID, after a failure or a crash before the commit) replays
 * their results instead of running the tools again.
 *
 * Guarantees, in every store and across the processes sharing it: a call
 * recorded by `recordToolCall` (resolved) is returned by every later
 * `journaledToolCalls` of its scope until the scope is dropped, its session
 * deleted or {@link TOOL_JOURNAL_TTL_MS} has passed since it was recorded;
 * recording a key again replaces that call's entry (a start becomes a
 * result; a result is never replaced by a start); a scope is found only
 * under the session it was recorded with.
 *
 * Errors are AgentErrors: INVALID_ARGUMENT for an empty session or request
 * ID or key, RESOURCE_EXHAUSTED for a result over
 * {@link MAX_JOURNALED_OUTPUT_BYTES} or a scope past
 * {@link MAX_JOURNALED_CALLS}; the store's own errors otherwise.
 */
export interface ToolResultJournal {
  /** Durably records `call` under `scope` (resolves once it would survive a crash of this process). */
  recordToolCall(scope: ToolJournalScope, call: JournaledToolCall, ctx?: StoreCallContext): Promise<void>;
  /** The calls journaled under `scope` (none: empty), in no particular order. */
  journaledToolCalls(scope: ToolJournalScope, ctx?: StoreCallContext): Promise<JournaledToolCall[]>;
  /** Removes the scope's journal (its turn committed: a retry is answered from the commit). */
  dropToolCalls(scope: ToolJournalScope, ctx?: StoreCallContext): Promise<void>;
}

/** Whether `store` keeps a tool-call journal per turn. */
export function hasToolResultJournal<S>(
  store: SessionStore<S> | undefined,
): store is SessionStore<S> & ToolResultJournal {
  const s = store as Partial<ToolResultJournal> | undefined;
  return typeof s?.recordToolCall === "function" && typeof s.journaledToolCalls === "function";
}

/** Throws INVALID_ARGUMENT unless `scope` names a session and a request ID. */
export function checkJournalScope(scope: ToolJournalScope): void {
  if (typeof scope?.sessionId !== "string" || scope.sessionId === "")
    throw new AgentError("INVALID_ARGUMENT", "tool journal: sessionId must be a non-empty string");
  if (typeof scope.requestId !== "string" || scope.requestId === "")
    throw new AgentError("INVALID_ARGUMENT", "tool journal: requestId must be a non-empty string");
}

/**
 * Checks `call` and returns its output as JSON (undefined for a start):
 * INVALID_ARGUMENT for an empty key or tool or a bad time, RESOURCE_EXHAUSTED
 * for an output over {@link MAX_JOURNALED_OUTPUT_BYTES}.
 */
export function checkJournaledCall(call: JournaledToolCall): string | undefined {
  if (typeof call?.key !== "string" || call.key === "")
    throw new AgentError("INVALID_ARGUMENT", "tool journal: a call's key must be a non-empty string");
  if (typeof call.tool !== "string" || call.tool === "")
    throw new AgentError("INVALID_ARGUMENT", "tool journal: a call's tool must be a non-empty string");
  if (!Number.isSafeInteger(call.startedAt) || call.startedAt < 0)
    throw new AgentError("INVALID_ARGUMENT", "tool journal: startedAt must be an epoch-ms integer");
  if (call.endedAt === undefined) return undefined;
  if (!Number.isSafeInteger(call.endedAt) || call.endedAt < 0)
    throw new AgentError("INVALID_ARGUMENT", "tool journal: endedAt must be an epoch-ms integer");
  const json = JSON.stringify(call.output ?? null);
  if (Buffer.byteLength(json) > MAX_JOURNALED_OUTPUT_BYTES)
    throw new AgentError(
      "RESOURCE_EXHAUSTED",
      `tool journal: the result of tool "${call.tool}" is over ${MAX_JOURNALED_OUTPUT_BYTES} bytes as JSON; it cannot be journaled`,
    );
  return json;
}

/** The error for a scope that already holds {@link MAX_JOURNALED_CALLS} calls. */
export function journalFullError(scope: ToolJournalScope): AgentError {
  return new AgentError(
    "RESOURCE_EXHAUSTED",
    `tool journal: the turn with request ID ${scope.requestId} already journaled ${MAX_JOURNALED_CALLS} tool calls`,
  );
}
