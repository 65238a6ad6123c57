import { agentdInstruments } from "../runtime/telemetry/telemetry.js";
import * as names from "../runtime/telemetry/telemetry-names.js";
import type { Message, Part, ToolRequest } from "../types/content.js";
import type { TurnToolCall, TurnToolJournal } from "../runtime/sessions/turn-tool-journal.js";
import { toolCallKey, turnIdentity } from "./tool-journal.js";

/**
 * What repeating a tool call does, as its tool declares it:
 * - `idempotent`: running it again is harmless; a call without a journaled
 *   result simply runs again.
 * - `effect` (the default): a journaled result is replayed; a call that may
 *   have started without a journaled result is re-invoked with the same
 *   `ctx.idempotencyKey` (pass it on to the API the tool calls).
 * - `never-repeat`: as `effect`, but a call that may have started without a
 *   journaled result is not re-invoked: the turn ends `interrupted` with
 *   `interrupt.neverRepeat` on the request, for the client to respond to
 *   (the outcome it knows) or restart (run it again, same key).
 */
export type ToolSemantics = "idempotent" | "effect" | "never-repeat";

/** What one tool call runs with: its request part, the keys' round index and whether a client restarted it. */
export interface JournalCall {
  partIndex: number;
  round: number;
  request: ToolRequest;
  resumed?: unknown;
}

/** How a call of a round is answered: its journaled result, an interrupt (never-repeat), or by running it. */
export type CallPlan =
  | { kind: "replay"; key: string; output: unknown }
  | { kind: "refuse"; key: string; startedAt: number }
  | { kind: "run"; key: string };

/** Metadata key on a `toolRequest` part: the call's journal entry ({@link ToolCallEntry}). */
export const TOOL_CALL_KEY = "toolCall";

/** A tool call's journal entry, stored on its request part as `metadata.toolCall`. */
export interface ToolCallEntry {
  /** The call's idempotency key (`ctx.idempotencyKey`). */
  key: string;
  tool: string;
  /** The turn identity the key was derived from. */
  turn: string;
  /** The tool round in the turn. */
  round: number;
  /** Set once the call has a result: it `ran` here, or its result was `replayed` from the journal. */
  outcome?: "ran" | "replayed";
  /** When the call started (epoch ms). */
  startedAt: number;
  /** When its result was journaled (epoch ms). */
  endedAt?: number;
  /** The journaled result, while the round is open (the `tool` message holds it once the round ends). */
  output?: unknown;
}

/** What the journal reads and edits of the session: its history. */
export interface JournalHistory {
  messages(): readonly Message[];
  /** How many messages the history holds. */
  readonly messageCount: number;
  /** The message at `index` (negative: from the end), as `Array.prototype.at`. */
  messageAt(index: number): Message | undefined;
  setMessages(messages: readonly Message[]): void;
}

/** The journal entry on `part`, if any. */
export function toolCallEntryOf(part: Part | undefined): ToolCallEntry | undefined {
  const entry = part?.metadata?.[TOOL_CALL_KEY] as ToolCallEntry | undefined;
  return entry && typeof entry === "object" && typeof entry.key === "string" ? entry : undefined;
}

/** Counts a tool call in `agentd.tool.calls`. */
export function countToolCall(tool: string, outcome: "ran" | "replayed" | "refused"): void {
  agentdInstruments().toolCalls.add(1, {
    [names.ATTR_GEN_AI_TOOL_NAME]: tool,
    [names.ATTR_TOOL_OUTCOME]: outcome,
  });
}

/**
 * The journal of a turn's tool calls, kept on the request parts of the
 * model message each round answers (`metadata.toolCall`) so that it is part
 * of every checkpoint of detached work: a call's start and result are
 * written there and checkpointed (checkpoints chained, each one after the
 * previous one landed, so a later one never regresses an earlier one) before
 * the next model call. A re-execution of the turn (a takeover) finds them
 * in its history and answers journaled calls from there.
 */
export class ToolCallJournal {
  private chain: Promise<void> = Promise.resolve();
  /** How many messages the history held when the turn started (its identity hashes no later one). */
  private readonly startLength: number;
  private turnValue: string | undefined;
  /** Index of the next new tool round. */
  nextRound: number;

  constructor(
    private readonly session: JournalHistory,
    private readonly sessionId: string,
    private readonly requestId: string | undefined,
    private readonly save: (() => Promise<void>) | undefined,
    private readonly stored?: TurnToolJournal,
  ) {
    this.startLength = session.messageCount;
    const last = lastEntry(session);
    // A continued or resumed turn keeps the identity its earlier rounds used.
    this.turnValue = last?.turn;
    this.nextRound = last ? last.round + 1 : 0;
  }

  /**
   * The turn part of this turn's tool-call identities (see `turnIdentity`).
   * Computed on first use, from the messages the history held when the turn
   * started (the turn edits only its own model messages, after the last user
   * message, which the identity leaves out): a turn that calls no tool
   * neither copies nor hashes its history, so its cost does not grow with
   * the conversation.
   */
  get turn(): string {
    return (this.turnValue ??= turnIdentity(
      this.requestId,
      this.requestId ? [] : this.session.messages().slice(0, this.startLength),
    ));
  }

  /** The key of call `call` of round `round`. */
  keyOf(round: number, call: number): string {
    return toolCallKey({ sessionId: this.sessionId, turn: this.turn, round, call });
  }

  /** The round `message` (a model message) answers: the one its journal entries name, else the next new round. */
  roundOf(message: Message): number {
    const entry = message.content.map(toolCallEntryOf).find((e) => e !== undefined);
    return entry && entry.turn === this.turn ? entry.round : this.nextRound++;
  }

  /** The entry of part `partIndex` of the last message (the model message being answered). */
  entry(partIndex: number): ToolCallEntry | undefined {
    return toolCallEntryOf(this.session.messageAt(-1)?.content[partIndex]);
  }

  /** Sets (merges) the entry of part `partIndex` of the last message. */
  set(partIndex: number, entry: Partial<ToolCallEntry>): void {
    const messages = this.session.messages();
    const last = messages.at(-1)!;
    const content = last.content.map((part, i) => {
      if (i !== partIndex) return part;
      const previous = toolCallEntryOf(part);
      return { ...part, metadata: { ...part.metadata, [TOOL_CALL_KEY]: { ...previous, ...entry } } };
    });
    this.session.setMessages([...messages.slice(0, -1), { ...last, content }]);
  }

  /**
   * Journals the start of the round's calls before any runs: each call keeps
   * the key an earlier execution of it recorded (else gets its own), calls
   * without a journaled result are marked started, and, when one of them is
   * not idempotent, the turn is checkpointed first (the model message and
   * keys are durable before any effect). Returns how each call is answered (`semanticsOf`: what each tool declared).
   */
  async open(calls: JournalCall[], semanticsOf: (tool: string) => ToolSemantics): Promise<Map<number, CallPlan>> {
    const plan = new Map<number, CallPlan>();
    let effects = false;
    const now = Date.now();
    const starts: TurnToolCall[] = [];
    const stored = await this.storedCalls(calls);
    for (const c of calls) {
      const earlier = this.entry(c.partIndex);
      const key = earlier?.key ?? this.keyOf(c.round, callIndex(this.session.messageAt(-1)!, c.partIndex));
      const semantics = semanticsOf(c.request.name);
      if (earlier?.endedAt !== undefined && "output" in earlier) {
        plan.set(c.partIndex, { kind: "replay", key, output: earlier.output });
        continue;
      }
      // An earlier attempt of this turn (a client's retry of it) journaled this call in the store.
      const prior = earlier ? undefined : stored?.get(key);
      const journaled = prior?.tool === c.request.name ? prior : undefined;
      if (journaled?.endedAt !== undefined) {
        plan.set(c.partIndex, { kind: "replay", key, output: journaled.output ?? null });
        this.set(c.partIndex, {
          key,
          tool: c.request.name,
          turn: this.turn,
          round: c.round,
          startedAt: journaled.startedAt,
          endedAt: journaled.endedAt,
        });
        continue;
      }
      const started = earlier?.startedAt ?? journaled?.startedAt;
      if (started !== undefined && semantics === "never-repeat" && c.resumed === undefined) {
        plan.set(c.partIndex, { kind: "refuse", key, startedAt: started });
        continue;
      }
      if (semantics !== "idempotent") effects = true;
      if (semantics === "never-repeat" && this.stored) starts.push({ key, tool: c.request.name, startedAt: now });
      plan.set(c.partIndex, { kind: "run", key });
      this.set(c.partIndex, {
        key,
        tool: c.request.name,
        turn: this.turn,
        round: earlier?.round ?? c.round,
        startedAt: now,
      });
    }
    // A never-repeat call's start is durable before it runs: a retry that finds no result asks the client instead.
    await Promise.all(starts.map((start) => this.stored!.record(start)));
    if (effects) await this.checkpoint();
    return plan;
  }

  /**
   * Journals the result of the call of part `partIndex` (it ran): on the
   * request part and, for a turn with a store journal, durably in the store;
   * then checkpoints (detached work). Resolves once durable; rejects when
   * the store could not record it (the turn fails: a retry runs the call
   * again with the same key, rather than lose track of it). `inStore`
   * false keeps the result on the request part only: a call without an
   * effect (to a tool the agent does not define), which a retry answers the
   * same way again.
   */
  async completed(partIndex: number, output: unknown, inStore = true): Promise<void> {
    const endedAt = Date.now();
    this.set(partIndex, { outcome: "ran", endedAt, output });
    const entry = this.entry(partIndex)!;
    if (this.stored && inStore)
      await this.stored.record({ key: entry.key, tool: entry.tool, startedAt: entry.startedAt, endedAt, output });
    await this.checkpoint();
  }

  /** The calls the store journaled for this turn, when some of `calls` have no result in the history yet. */
  private async storedCalls(calls: JournalCall[]): Promise<ReadonlyMap<string, TurnToolCall> | undefined> {
    if (!this.stored) return undefined;
    if (calls.every((c) => this.entry(c.partIndex)?.endedAt !== undefined)) return undefined;
    return this.stored.calls();
  }

  /** Checkpoints the turn so far (detached work), after every earlier checkpoint of this journal landed. */
  checkpoint(): Promise<void> {
    const save = this.save;
    if (!save) return Promise.resolve();
    this.chain = this.chain.then(save, save);
    return this.chain;
  }
}

/** The last journal entry of the turn the history ends in (searched back to its last user message). */
function lastEntry(history: JournalHistory): ToolCallEntry | undefined {
  for (let i = history.messageCount - 1; i >= 0 && history.messageAt(i)!.role !== "user"; i--) {
    const message = history.messageAt(i)!;
    if (message.role !== "model") continue;
    for (let p = message.content.length - 1; p >= 0; p--) {
      const entry = toolCallEntryOf(message.content[p]);
      if (entry) return entry;
    }
  }
  return undefined;
}

/** `part` without the result its journal entry carried while the round was open. */
export function withoutJournaledOutput(part: Part): Part {
  const entry = toolCallEntryOf(part);
  if (!entry || !("output" in entry)) return part;
  const { output: _output, ...rest } = entry;
  return { ...part, metadata: { ...part.metadata, [TOOL_CALL_KEY]: rest } };
}

/** The position of part `partIndex` among the tool requests of `message`. */
function callIndex(message: Message, partIndex: number): number {
  let index = 0;
  for (let i = 0; i < partIndex; i++) if (message.content[i]!.toolRequest) index++;
  return index;
}
