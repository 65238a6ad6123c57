import type { ZodType } from "zod";
import type { Artifact, Message } from "../../types/content.js";
import type { SessionState } from "../../types/session-state.js";
import { deepFreeze, frozenCopy } from "../../../stores/ledger/frozen-value.js";
import { addArtifact } from "../../../stores/ledger/state-delta.js";
import { validateCustomState } from "../agents/custom-state-schema.js";
import { SessionMark } from "./session-mark.js";

/** Called after every change to custom state (the runtime streams a patch). */
export type CustomChangeListener = () => void | Promise<void>;

/**
 * The conversation state of one invocation: messages, typed custom state and
 * artifacts.
 *
 * Isolation is by immutability, not copying: a message or artifact is copied
 * and deep-frozen once when it enters the session, and from then on shared by
 * later turns, snapshots and the store. Readers get frozen values (a frozen
 * array of frozen messages); to change history, pass new values to
 * {@link Session.setMessages}. So a turn costs the size of what it adds, never
 * the size of the history. Custom state is the exception callers may mutate:
 * {@link Session.custom} and the `updateCustom` callback get a private copy.
 * Adding an artifact whose name exists replaces it; unnamed artifacts append.
 */
export class Session<S = unknown> {
  private readonly id: string;
  /** Only ever appended to, or replaced by a new array: a {@link SessionMark} keeps a prefix of it. */
  private history: Message[];
  private historyView: readonly Message[] | undefined;
  /** Leading messages unchanged since the last {@link Session.markUnchanged} (the delta keeps them). */
  private stablePrefix: number;
  private customValue: S | undefined;
  private artifactList: Artifact[];
  private readonly schema: ZodType<S> | undefined;
  private customListener: CustomChangeListener | undefined;
  private pendingCustomEvent: Promise<void> = Promise.resolve();

  /** `state` is adopted as is (deep-frozen in place where it is not yet). */
  constructor(state: SessionState<S>, schema?: ZodType<S>) {
    this.id = state.sessionId ?? "";
    this.history = [...deepFreeze(state.messages)];
    this.stablePrefix = this.history.length;
    this.customValue = deepFreeze(state.custom);
    this.artifactList = [...deepFreeze(state.artifacts)];
    this.schema = schema;
  }

  /** The stable conversation ID. */
  get sessionId(): string {
    return this.id;
  }

  /**
   * The whole state as a frozen value sharing the session's frozen messages
   * and artifacts: O(1) in the history length beyond one array of references.
   */
  snapshotState(): SessionState<S> {
    const state: SessionState<S> = {
      sessionId: this.id,
      messages: this.messages() as Message[],
      artifacts: this.artifacts() as Artifact[],
    };
    if (this.customValue !== undefined) state.custom = this.customValue;
    return Object.freeze(state);
  }

  /**
   * @internal The state as it is now without copying the history (see
   * {@link SessionMark}): O(1) in the history length, plus a copy of the
   * artifacts.
   */
  mark(): SessionMark<S> {
    return new SessionMark(this.id, this.history, this.history.length, this.customValue, this.artifacts());
  }

  /** Replaces the whole state (the runtime rolls back to the last good state with it). */
  restore(state: SessionState<S>): void {
    this.history = [...deepFreeze(state.messages)];
    this.stablePrefix = this.history.length;
    this.historyView = undefined;
    this.customValue = deepFreeze(state.custom);
    this.artifactList = [...deepFreeze(state.artifacts)];
  }

  /** The history: a frozen array of frozen messages (read-only; see {@link Session.setMessages}). */
  messages(): readonly Message[] {
    return (this.historyView ??= Object.freeze(this.history.slice()));
  }

  /** How many messages the history holds (no copy of it). */
  get messageCount(): number {
    return this.history.length;
  }

  /** The history's message at `index` (negative: from the end, as `Array.prototype.at`), without copying the history. */
  messageAt(index: number): Message | undefined {
    return this.history.at(index);
  }

  /**
   * `prelude` followed by the history, in a new array the caller owns (its
   * messages are the session's frozen ones): what a model request is sent.
   * One block copy of references from the session's own array, the cheapest
   * way to hand a growing history on (V8 copies out of a frozen array, such
   * as {@link Session.messages}, element by element on a slow path).
   */
  messagesAfter(prelude: readonly Message[]): Message[] {
    return prelude.concat(this.history);
  }

  /** Appends messages to the history (each copied and frozen once). */
  addMessages(...messages: Message[]): void {
    for (const m of messages) this.history.push(frozenCopy(m));
    this.historyView = undefined;
  }

  /** Replaces the history. Messages already in the session are kept as they are; new ones are copied and frozen. */
  setMessages(messages: readonly Message[]): void {
    const next = messages.map((m) => (Object.isFrozen(m) ? m : frozenCopy(m)));
    let same = 0;
    const limit = Math.min(this.stablePrefix, next.length);
    while (same < limit && next[same] === this.history[same]) same++;
    this.stablePrefix = same;
    this.history = next;
    this.historyView = undefined;
  }

  /** A private, mutable copy of the custom state. */
  custom(): S | undefined {
    return this.customValue === undefined ? undefined : structuredClone(this.customValue);
  }

  /**
   * Replaces custom state with `fn(current)` (`current` is a private copy).
   * The result must satisfy the agent's state schema (AgentError
   * INVALID_ARGUMENT naming the field otherwise). A patch chunk is streamed to
   * the client.
   */
  updateCustom(fn: (current: S | undefined) => S): void {
    const next = fn(this.custom());
    const valid = this.schema ? validateCustomState(this.schema, next, "custom state") : structuredClone(next);
    this.customValue = deepFreeze(valid);
    const listener = this.customListener;
    if (listener) this.pendingCustomEvent = this.pendingCustomEvent.then(() => listener());
  }

  /** The artifacts: a frozen array of frozen artifacts. */
  artifacts(): readonly Artifact[] {
    return Object.freeze(this.artifactList.slice());
  }

  /** Adds artifacts (each copied and frozen once): same-named ones replace, unnamed ones append. */
  addArtifacts(...artifacts: Artifact[]): void {
    for (const artifact of artifacts) addArtifact(this.artifactList, frozenCopy(artifact));
  }

  /** @internal Installs the runtime's custom-state listener. */
  onCustomChange(listener: CustomChangeListener | undefined): void {
    this.customListener = listener;
  }

  /** @internal How many leading messages are unchanged since the last {@link markUnchanged}. */
  unchangedMessages(): number {
    return this.stablePrefix;
  }

  /** @internal Marks the current history as the base of the next delta (after a commit). */
  markUnchanged(): void {
    this.stablePrefix = this.history.length;
  }

  /** @internal The frozen custom state itself (no copy): for runtime code that only reads it. */
  frozenCustom(): S | undefined {
    return this.customValue;
  }

  /** @internal Resolves once every custom-change notification so far has been handled. */
  flushCustomEvents(): Promise<void> {
    return this.pendingCustomEvent;
  }
}
