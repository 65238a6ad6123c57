import {
  checkJournalScope,
  checkJournaledCall,
  journalFullError,
  MAX_JOURNALED_CALLS,
  TOOL_JOURNAL_TTL_MS,
  type JournaledToolCall,
  type ToolJournalScope,
} from "./tool-result-journal.js";

interface Entry {
  call: JournaledToolCall;
  recordedAt: number;
}

/**
 * The tool-call journals of one in-memory store (see `ToolResultJournal`),
 * per session and request ID. Values are stored as their JSON and parsed on
 * read, so a caller's later edits never reach the journal. Entries older
 * than {@link TOOL_JOURNAL_TTL_MS} are dropped when their session is next written.
 */
export class MemoryToolJournal {
  private readonly sessions = new Map<string, Map<string, Map<string, Entry>>>();

  /** Records `call` (a result is never replaced by a start). */
  record(scope: ToolJournalScope, call: JournaledToolCall, now = Date.now()): void {
    checkJournalScope(scope);
    const json = checkJournaledCall(call);
    const requests = this.sessions.get(scope.sessionId) ?? new Map<string, Map<string, Entry>>();
    this.sessions.set(scope.sessionId, requests);
    for (const [requestId, calls] of requests)
      for (const [key, entry] of calls) {
        if (now - entry.recordedAt > TOOL_JOURNAL_TTL_MS) calls.delete(key);
        if (calls.size === 0) requests.delete(requestId);
      }
    const calls = requests.get(scope.requestId) ?? new Map<string, Entry>();
    requests.set(scope.requestId, calls);
    const existing = calls.get(call.key);
    if (existing?.call.endedAt !== undefined && call.endedAt === undefined) return;
    if (!existing && calls.size >= MAX_JOURNALED_CALLS) throw journalFullError(scope);
    const stored: JournaledToolCall = { key: call.key, tool: call.tool, startedAt: call.startedAt };
    if (json !== undefined) {
      stored.endedAt = call.endedAt;
      stored.output = JSON.parse(json);
    }
    calls.set(call.key, { call: stored, recordedAt: now });
  }

  /** The calls journaled under `scope`, as copies. */
  list(scope: ToolJournalScope, now = Date.now()): JournaledToolCall[] {
    checkJournalScope(scope);
    const calls = this.sessions.get(scope.sessionId)?.get(scope.requestId);
    if (!calls) return [];
    return [...calls.values()]
      .filter((e) => now - e.recordedAt <= TOOL_JOURNAL_TTL_MS)
      .map((e) => structuredClone(e.call));
  }

  /** Removes the scope's journal. */
  drop(scope: ToolJournalScope): void {
    checkJournalScope(scope);
    const requests = this.sessions.get(scope.sessionId);
    requests?.delete(scope.requestId);
    if (requests?.size === 0) this.sessions.delete(scope.sessionId);
  }

  /** Sessions holding at least one journal (for tests and diagnostics). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Removes every journal of the session. */
  removeSession(sessionId: string): void {
    this.sessions.delete(sessionId);
  }
}
