import { AgentError } from "../../errors/agent-error.js";
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
 * The journal entry that names the input whose attempt journaled the calls:
 * its key (no tool-call key has this form: those are UUIDs) and tool; its
 * `output` is the input's request fingerprint.
 */
export const INPUT_ENTRY = { key: "agentd.input", tool: "agentd.input" } as const;

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
  request: { requestId: string; fingerprint: string },
  ctx?: StoreCallContext,
): StoreTurnToolJournal | undefined {
  if (!hasToolResultJournal(store)) return undefined;
  return new StoreTurnToolJournal(store, { sessionId, requestId: request.requestId }, request.fingerprint, ctx);
}

/**
 * {@link TurnToolJournal} on a store; `drop` removes it once the turn
 * committed. The journal also holds the fingerprint of the input whose
 * attempt journaled it ({@link INPUT_ENTRY}, written before the attempt's
 * first call): a retry that reuses the request ID for another input finds
 * INVALID_ARGUMENT instead of the first input's results, as it would once
 * that turn committed.
 */
export class StoreTurnToolJournal implements TurnToolJournal {
  private loaded: Promise<ReadonlyMap<string, JournaledToolCall>> | undefined;
  private inputNamed: Promise<void> | undefined;
  used = false;

  constructor(
    private readonly store: ToolResultJournal,
    private readonly scope: ToolJournalScope,
    private readonly fingerprint: string,
    private readonly ctx: StoreCallContext | undefined,
  ) {}

  calls(): Promise<ReadonlyMap<string, JournaledToolCall>> {
    this.used = true;
    this.loaded ??= this.store.journaledToolCalls(this.scope, this.ctx).then((calls) => this.ofThisInput(calls));
    return this.loaded;
  }

  async record(call: JournaledToolCall): Promise<void> {
    this.used = true;
    // Read first (once): an entry naming another input fails here instead of being overwritten.
    await this.calls();
    this.inputNamed ??= this.nameInput();
    await this.inputNamed;
    return this.store.recordToolCall(this.scope, call, this.ctx);
  }

  /** The journaled calls by key, without the input entry; INVALID_ARGUMENT when that names another input. */
  private ofThisInput(calls: readonly JournaledToolCall[]): ReadonlyMap<string, JournaledToolCall> {
    const byKey = new Map<string, JournaledToolCall>();
    for (const call of calls) {
      if (call.key !== INPUT_ENTRY.key) byKey.set(call.key, call);
      else if (call.output === this.fingerprint) this.inputNamed ??= Promise.resolve();
      else
        throw new AgentError(
          "INVALID_ARGUMENT",
          `input.request_id "${this.scope.requestId}" was first sent with a different input, whose attempt ran tools before it failed; send a new input with a new request ID`,
        );
    }
    return byKey;
  }

  /** Journals the input entry (once per attempt, before its first call). */
  private nameInput(): Promise<void> {
    const now = Date.now();
    const entry = { ...INPUT_ENTRY, startedAt: now, endedAt: now, output: this.fingerprint };
    return this.store.recordToolCall(this.scope, entry, this.ctx);
  }

  /** Removes the journal from the store (the turn committed: a retry is answered from its commit). */
  drop(): Promise<void> {
    return this.store.dropToolCalls(this.scope, this.ctx);
  }
}
