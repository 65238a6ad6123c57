import type { Artifact, Message } from "../../types/content.js";
import type { SessionState } from "../../types/session-state.js";

/**
 * A session's state at one point, kept without a copy of its history: the
 * session's history array as it was then, and how many of its messages the
 * state holds. A session only appends to its history array, or replaces it
 * with a new one, so those first `length` messages never change. What the
 * runtime keeps per turn (the base of the next commit's delta, the last good
 * state): a turn then costs what it added, not a copy of the history.
 * {@link SessionMark.state} makes the frozen {@link SessionState} only when
 * one is needed.
 */
export class SessionMark<S> {
  private made: SessionState<S> | undefined;

  /** `artifacts`: a frozen copy (a session replaces same-named artifacts in place). */
  constructor(
    readonly sessionId: string,
    readonly history: readonly Message[],
    readonly length: number,
    readonly custom: S | undefined,
    readonly artifacts: readonly Artifact[],
  ) {}

  /** The marked state as a frozen value; its messages are copied out of the history on the first call only. */
  state(): SessionState<S> {
    if (this.made) return this.made;
    const state: SessionState<S> = {
      sessionId: this.sessionId,
      messages: Object.freeze(this.history.slice(0, this.length)) as Message[],
      artifacts: this.artifacts as Artifact[],
    };
    if (this.custom !== undefined) state.custom = this.custom;
    return (this.made = Object.freeze(state));
  }

  /**
   * True when `later` was marked on the same history array, at this mark's
   * length or beyond: its messages are this mark's followed by the ones
   * `later.history.slice(this.length, later.length)` holds.
   */
  isPrefixOf(later: SessionMark<S>): boolean {
    return later.history === this.history && later.length >= this.length;
  }
}
