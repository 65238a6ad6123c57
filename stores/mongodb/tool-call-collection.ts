import type { Collection } from "mongodb";
import {
  checkJournalScope,
  checkJournaledCall,
  journalFullError,
  MAX_JOURNALED_CALLS,
  TOOL_JOURNAL_TTL_MS,
  type JournaledToolCall,
  type ToolJournalScope,
} from "../tool-result-journal.js";
import type { IndexSpec } from "./index-setup.js";

/** One journaled tool call of a turn not yet committed (see `ToolResultJournal`). */
export interface ToolCallDocument {
  _id: { s: string; r: string; k: string };
  sessionId: string;
  requestId: string;
  tool: string;
  startedAt: number;
  endedAt?: number;
  /** The result as JSON (a string: a result's keys may be anything, `$`-prefixed ones included). */
  output?: string;
  /** When MongoDB's TTL monitor removes it: {@link TOOL_JOURNAL_TTL_MS} after it was written. */
  expireAt: Date;
}

/**
 * The indexes of `<prefix>tool_calls`: a turn's calls by (session, request ID)
 * (the `_id` prefix serves that); by session, so deleting a session removes
 * them with one indexed `deleteMany`; the TTL index on `expireAt`.
 */
export const TOOL_CALL_INDEXES: readonly IndexSpec[] = [
  { name: "tool_call_session", key: { sessionId: 1, requestId: 1 } },
  {
    name: "expire_at_ttl",
    key: { expireAt: 1 },
    expireAfterSeconds: 0,
    expires: { documents: "tool calls", sweep: "tool-call journals" },
  },
];

/**
 * The tool-call journals of the MongoDB store: one document per call, written
 * with the store's write concern (majority, journaled by default), so a call
 * is durable when `record` resolves. A start is inserted only when the call
 * has no document (`$setOnInsert`), so it never replaces a result.
 */
export class ToolCallCollection {
  constructor(private readonly collection: () => Promise<Collection<ToolCallDocument>>) {}

  /** Records `call`; RESOURCE_EXHAUSTED when the scope already holds {@link MAX_JOURNALED_CALLS} others. */
  async record(scope: ToolJournalScope, call: JournaledToolCall, now = Date.now()): Promise<void> {
    checkJournalScope(scope);
    const output = checkJournaledCall(call);
    const c = await this.collection();
    const _id = { s: scope.sessionId, r: scope.requestId, k: call.key };
    const held = await c.countDocuments({ sessionId: scope.sessionId, requestId: scope.requestId });
    if (held >= MAX_JOURNALED_CALLS && !(await c.findOne({ _id }, { projection: { _id: 1 } })))
      throw journalFullError(scope);
    const fields = {
      sessionId: scope.sessionId,
      requestId: scope.requestId,
      tool: call.tool,
      startedAt: call.startedAt,
      expireAt: new Date(now + TOOL_JOURNAL_TTL_MS),
    };
    if (output === undefined) await c.updateOne({ _id }, { $setOnInsert: fields }, { upsert: true });
    else await c.updateOne({ _id }, { $set: { ...fields, endedAt: call.endedAt!, output } }, { upsert: true });
  }

  /** The calls journaled under `scope` whose time has not passed. */
  async list(scope: ToolJournalScope, now = Date.now()): Promise<JournaledToolCall[]> {
    checkJournalScope(scope);
    const c = await this.collection();
    const docs = await c
      .find({ sessionId: scope.sessionId, requestId: scope.requestId, expireAt: { $gt: new Date(now) } })
      .toArray();
    return docs.map((d) => {
      const call: JournaledToolCall = { key: d._id.k, tool: d.tool, startedAt: d.startedAt };
      if (d.endedAt !== undefined && d.output !== undefined) {
        call.endedAt = d.endedAt;
        call.output = JSON.parse(d.output);
      }
      return call;
    });
  }

  /** Removes the scope's documents. */
  async drop(scope: ToolJournalScope): Promise<void> {
    checkJournalScope(scope);
    const c = await this.collection();
    await c.deleteMany({ sessionId: scope.sessionId, requestId: scope.requestId });
  }
}
