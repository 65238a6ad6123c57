import type { SessionStore, StoreCallContext } from "../../../stores/snapshot-store.js";
import {
  hasToolResultJournal,
  type JournaledToolCall,
  type ToolJournalScope,
  type ToolResultJournal,
} from "../../../stores/tool-result-journal.js";

/** A journaled tool call of a turn, as the store keeps it (see `JournaledToolCall`). */
export type TurnToolCall = JournaledToolCall;

/**
 * The tool calls of one running turn as kept in the session store under the
 * turn's request ID (see `ToolResultJournal`): what an earlier attempt of the
 * same turn journaled before it failed or its process died, and where this
 * attempt journals its own. Read once, on first use.
 */
export interface TurnToolJournal {
  /** The calls an earlier, uncommitted attempt of this turn journaled, by key (read from the store on the first call). */
  calls(): Promise<ReadonlyMap<string, JournaledToolCall>>;
  /** Durably records a call's start or result; rejects when the store could not write it. */
  record(call: JournaledToolCall): Promise<void>;
  /** True once this attempt read or wrote the journal (so that its commit drops it). */
  readonly used: boolean;
}

/**
 * The journal of the turn `requestId` of `sessionId` in `store`, or undefined
 * when the store keeps none (a store without the `ToolResultJournal` capability).
 */
export function turnToolJournal<S>(
  store: SessionStore<S> | undefined,
  sessionId: string,
  requestId: string,
  ctx?: StoreCallContext,
): StoreTurnToolJournal | undefined {
  if (!hasToolResultJournal(store)) return undefined;
  return new StoreTurnToolJournal(store, { sessionId, requestId }, ctx);
}

/** {@link TurnToolJournal} on a store; `drop` removes it once the turn committed. */
export class StoreTurnToolJournal implements TurnToolJournal {
  private loaded: Promise<ReadonlyMap<string, JournaledToolCall>> | undefined;
  used = false;

  constructor(
    private readonly store: ToolResultJournal,
    private readonly scope: ToolJournalScope,
    private readonly ctx: StoreCallContext | undefined,
  ) {}

  calls(): Promise<ReadonlyMap<string, JournaledToolCall>> {
    this.used = true;
    this.loaded ??= this.store
      .journaledToolCalls(this.scope, this.ctx)
      .then((calls) => new Map(calls.map((c) => [c.key, c])));
    return this.loaded;
  }

  record(call: JournaledToolCall): Promise<void> {
    this.used = true;
    return this.store.recordToolCall(this.scope, call, this.ctx);
  }

  /** Removes the journal from the store (the turn committed: a retry is answered from its commit). */
  drop(): Promise<void> {
    return this.store.dropToolCalls(this.scope, this.ctx);
  }
}
