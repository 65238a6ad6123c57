import fastJsonPatch, { type Operation } from "fast-json-patch";
import type { Artifact, Message } from "../../src/types/content.js";
import type { SessionState } from "../../src/types/session-state.js";
import type { StateDelta } from "../snapshot-store.js";
import { deepFreeze } from "./frozen-value.js";

/**
 * The change from `parent` to `next`. Messages and artifacts are compared by
 * identity (the runtime shares frozen values, so unchanged ones are the same
 * objects): the cost is the size of what changed, never a copy of the
 * history. `keptMessages`, when the caller knows it (the runtime's session
 * tracks it), is how many leading messages are unchanged; otherwise they are
 * compared one pointer at a time. Custom state is diffed as JSON.
 */
export function diffState<S>(parent: SessionState<S>, next: SessionState<S>, keptMessages?: number): StateDelta<S> {
  return diffStateAfterMessages(parent, next, diffMessages(prefixOf(parent), prefixOf(next), keptMessages));
}

/** The messages' part of a {@link StateDelta}. */
export type MessagesDelta = Pick<StateDelta<unknown>, "keepMessages" | "appendMessages">;

/** The first `length` messages of `history` (a session's history as it was when marked, or a state's messages). */
export interface HistoryPrefix {
  readonly history: readonly Message[];
  readonly length: number;
}

/** All of `state`'s messages, as a {@link HistoryPrefix}. */
function prefixOf(state: SessionState<unknown>): HistoryPrefix {
  return { history: state.messages, length: state.messages.length };
}

/**
 * The messages' part of the change from `before` to `after`, compared by
 * identity: how many leading messages they share, and the rest of
 * `after`'s. `keptMessages` (checked at its last message) skips comparing
 * the ones the caller knows are unchanged. Costs what changed, plus the
 * comparisons the hint does not cover; neither history is copied.
 */
export function diffMessages(before: HistoryPrefix, after: HistoryPrefix, keptMessages?: number): MessagesDelta {
  const [a, b] = [before.history, after.history];
  const limit = Math.min(before.length, after.length);
  let keep = keptMessages !== undefined ? Math.min(keptMessages, limit) : 0;
  if (keep > 0 && a[keep - 1] !== b[keep - 1]) keep = 0; // a wrong hint: fall back to comparing
  while (keep < limit && a[keep] === b[keep]) keep++;
  return { keepMessages: keep, appendMessages: b.slice(keep, after.length) };
}

/**
 * The change from `parent` to `next` when the caller already knows its
 * messages' part (`messages`): custom state and artifacts are diffed as by
 * {@link diffState}; neither side's messages are read.
 */
export function diffStateAfterMessages<S>(
  parent: { readonly custom?: S | undefined; readonly artifacts: readonly Artifact[] },
  next: { readonly custom?: S | undefined; readonly artifacts: readonly Artifact[] },
  messages: MessagesDelta,
): StateDelta<S> {
  const delta: StateDelta<S> = { keepMessages: messages.keepMessages, appendMessages: messages.appendMessages };
  const custom = diffCustom(parent.custom, next.custom);
  if (custom === "removed") delta.customRemoved = true;
  else if (custom && custom.length > 0) delta.customPatch = custom;
  const artifacts = diffArtifacts(parent.artifacts, next.artifacts);
  if (artifacts.reset) delta.artifactsReset = true;
  if (artifacts.added.length > 0) delta.artifacts = artifacts.added;
  return delta;
}

function diffCustom(before: unknown, after: unknown): Operation[] | "removed" | undefined {
  if (before === after) return undefined;
  if (after === undefined) return before === undefined ? undefined : "removed";
  const bothObjects = isContainer(before) && isContainer(after) && Array.isArray(before) === Array.isArray(after);
  if (!bothObjects) return [{ op: "replace", path: "", value: after }];
  return fastJsonPatch.compare(before as object, after as object);
}

function isContainer(value: unknown): value is object {
  return value !== null && typeof value === "object";
}

/**
 * The artifacts to add to `before` to get `after`: the changed and new ones
 * when `after` keeps `before`'s order (same-named replaced in place, unnamed
 * and new ones appended), else a reset followed by all of `after`.
 */
function diffArtifacts(before: readonly Artifact[], after: readonly Artifact[]): { reset: boolean; added: Artifact[] } {
  const replay = [...before];
  const added: Artifact[] = [];
  for (const artifact of after) {
    if (replay.includes(artifact)) continue;
    added.push(artifact);
    addArtifact(replay, artifact);
  }
  const same = replay.length === after.length && replay.every((a, i) => a === after[i]);
  return same ? { reset: false, added } : { reset: true, added: [...after] };
}

/** Adds one artifact: a named one replaces the same-named artifact, others append. */
export function addArtifact(artifacts: Artifact[], artifact: Artifact): void {
  const at = artifact.name ? artifacts.findIndex((a) => a.name === artifact.name) : -1;
  if (at >= 0) artifacts[at] = artifact;
  else artifacts.push(artifact);
}

/** A state being rebuilt: arrays owned by the rebuild (their elements stay shared and frozen). */
export interface WorkingState {
  sessionId?: string;
  messages: Message[];
  artifacts: Artifact[];
  custom: unknown;
}

/** A working copy of `state`: its own arrays, sharing the (frozen) messages, artifacts and custom state. */
export function workingCopyOf(state: SessionState<unknown>): WorkingState {
  return {
    ...(state.sessionId ? { sessionId: state.sessionId } : {}),
    messages: [...state.messages],
    artifacts: [...state.artifacts],
    custom: state.custom,
  };
}

/** Applies `delta` to `working` in place: the one place a delta's meaning is implemented. */
export function applyDeltaTo(working: WorkingState, delta: StateDelta<unknown>): void {
  working.messages.length = Math.min(working.messages.length, delta.keepMessages);
  for (const m of delta.appendMessages) working.messages.push(m);
  if (delta.artifactsReset) working.artifacts = [...(delta.artifacts ?? [])];
  else for (const a of delta.artifacts ?? []) addArtifact(working.artifacts, a);
  if (delta.customRemoved) working.custom = undefined;
  else if (delta.customPatch) working.custom = patchCustom(working.custom, delta.customPatch);
}

/**
 * The state `delta` makes of `parent`. Shares the parent's (frozen) messages
 * and artifacts; the result is deep-frozen. DATA_LOSS-worthy inconsistencies
 * (a patch that does not apply) throw.
 */
export function applyStateDelta<S>(parent: SessionState<S>, delta: StateDelta<S>): SessionState<S> {
  const working = workingCopyOf(parent);
  applyDeltaTo(working, delta);
  const state: SessionState<S> = {
    ...(working.sessionId ? { sessionId: working.sessionId } : {}),
    messages: working.messages,
    artifacts: working.artifacts,
  };
  if (working.custom !== undefined) state.custom = working.custom as S;
  return deepFreeze(state);
}

/** `custom` with an RFC 6902 patch applied (both left untouched; the result is a new value). */
export function patchCustom(custom: unknown, patch: readonly Operation[]): unknown {
  const base = custom === undefined ? null : structuredClone(custom);
  return fastJsonPatch.applyPatch(base, structuredClone(patch) as Operation[], true, true).newDocument;
}

/** Serialized size of a JSON value in UTF-8 bytes (what a store writes for it). */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
}
