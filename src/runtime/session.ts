import type { ZodType } from "zod";
import type { Artifact, Message } from "../types/content.js";
import type { SessionState } from "../types/session-state.js";
import { validateCustomState } from "./custom-state-schema.js";

/** Called after every change to custom state (the runtime streams a patch). */
export type CustomChangeListener = () => void | Promise<void>;

/** Called after an artifact is added through {@link Session.addArtifacts}. */
export type ArtifactListener = (artifact: Artifact) => void;

/**
 * The conversation state of one invocation: messages, typed custom state and
 * artifacts. Readers get deep copies; writers replace. Adding an artifact whose
 * name exists replaces it; unnamed artifacts append. Custom state changes are
 * validated against the agent's state schema (when it has one) and announced so
 * the runtime can stream JSON Patch deltas.
 */
export class Session<S = unknown> {
  private state: SessionState<S>;
  private readonly schema: ZodType<S> | undefined;
  private customListener: CustomChangeListener | undefined;
  private pendingCustomEvent: Promise<void> = Promise.resolve();

  constructor(state: SessionState<S>, schema?: ZodType<S>) {
    this.state = structuredClone(state);
    this.schema = schema;
  }

  /** The stable conversation ID. */
  get sessionId(): string {
    return this.state.sessionId ?? "";
  }

  /** A deep copy of the whole state. */
  snapshotState(): SessionState<S> {
    return structuredClone(this.state);
  }

  /** Replaces the whole state (used by the runtime to roll back to the last good state). */
  restore(state: SessionState<S>): void {
    this.state = structuredClone(state);
  }

  /** A deep copy of the history. */
  messages(): Message[] {
    return structuredClone(this.state.messages);
  }

  /** Appends messages to the history. */
  addMessages(...messages: Message[]): void {
    this.state.messages.push(...structuredClone(messages));
  }

  /** Replaces the history. */
  setMessages(messages: Message[]): void {
    this.state.messages = structuredClone(messages);
  }

  /** A deep copy of the custom state. */
  custom(): S | undefined {
    return structuredClone(this.state.custom);
  }

  /**
   * Replaces custom state with `fn(current)`. The result must satisfy the
   * agent's state schema (AgentError INVALID_ARGUMENT naming the field otherwise).
   * A patch chunk is streamed to the client.
   */
  updateCustom(fn: (current: S | undefined) => S): void {
    const next = fn(structuredClone(this.state.custom));
    this.state.custom = this.schema ? validateCustomState(this.schema, next, "custom state") : structuredClone(next);
    const listener = this.customListener;
    if (listener) this.pendingCustomEvent = this.pendingCustomEvent.then(() => listener());
  }

  /** A deep copy of the artifacts. */
  artifacts(): Artifact[] {
    return structuredClone(this.state.artifacts);
  }

  /** Adds artifacts: same-named ones replace, unnamed ones append. */
  addArtifacts(...artifacts: Artifact[]): void {
    for (const artifact of structuredClone(artifacts)) {
      const at = artifact.name ? this.state.artifacts.findIndex((a) => a.name === artifact.name) : -1;
      if (at >= 0) this.state.artifacts[at] = artifact;
      else this.state.artifacts.push(artifact);
    }
  }

  /** @internal Installs the runtime's custom-state listener. */
  onCustomChange(listener: CustomChangeListener | undefined): void {
    this.customListener = listener;
  }

  /**
   * @internal The live state itself, not a copy: for runtime code that copies
   * it anyway (e.g. before a state transform). Callers must not mutate or keep it.
   */
  liveState(): Readonly<SessionState<S>> {
    return this.state;
  }

  /** @internal Resolves once every custom-change notification so far has been handled. */
  flushCustomEvents(): Promise<void> {
    return this.pendingCustomEvent;
  }
}
