import type { ZodType } from "zod";
import { AgentError } from "../../errors/agent-error.js";
import { messageFromJson, messageToJson } from "../../codec/message-json.js";
import type { JsonPatchOperation } from "../../types/agent-io.js";
import type { Message } from "../../types/content.js";
import type { AgentInit, SessionState } from "../../types/session-state.js";
import type { Principal } from "../../types/principal.js";
import type { SnapshotEdit } from "../../types/snapshot.js";
import { validateCustomState } from "../agents/custom-state-schema.js";
import { applyBoundedPatch, type PatchBounds } from "./bounded-patch.js";
import { DEFAULT_INPUT_LIMITS, type InputLimits } from "./input-limits.js";

/** Levels a message adds above the JSON it carries (history array, message, content list, part, tool request, input). */
const MESSAGE_NESTING = 6;

/** The edit an init asks for: its non-empty patches (see `AgentInit.statePatch` / `messagesPatch`). */
export interface InitEdit {
  statePatch?: JsonPatchOperation[];
  messagesPatch?: JsonPatchOperation[];
}

/** What checking an edit needs to know about the agent. */
export interface EditTarget {
  name: string;
  /** Whether the agent keeps state on the server (has a store). */
  serverManaged: boolean;
  /** Whether clients see the state through a state transform (then the stored state is not theirs to patch). */
  stateTransformed: boolean;
}

/**
 * The edit `init` asks for, or undefined when it carries no patch. Throws,
 * before anything is read or held: RESOURCE_EXHAUSTED for a patch with more
 * operations than `limits.maxPatchOperations`; FAILED_PRECONDITION for a client-managed
 * agent (it sends its state: edit that instead) or an agent with a state
 * transform (clients see a transformed state, so a patch cannot name the
 * stored one); INVALID_ARGUMENT for a new session (neither session_id nor
 * snapshot_id: there is no past to edit).
 */
export function initEditOf(
  agent: EditTarget,
  init: AgentInit<unknown>,
  limits: Pick<InputLimits, "maxPatchOperations"> = DEFAULT_INPUT_LIMITS,
): InitEdit | undefined {
  const edit: InitEdit = {};
  if (init.statePatch?.length) edit.statePatch = init.statePatch;
  if (init.messagesPatch?.length) edit.messagesPatch = init.messagesPatch;
  if (!edit.statePatch && !edit.messagesPatch) return undefined;
  const field = edit.statePatch ? "init.state_patch" : "init.messages_patch";
  if (!agent.serverManaged) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `${field}: agent "${agent.name}" is client-managed (it has no store): edit the state you send in init.state instead`,
      { details: { field } },
    );
  }
  if (!init.sessionId && !init.snapshotId) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `${field} edits a past snapshot: send it with session_id or snapshot_id (a new session has no state to edit)`,
      { details: { field } },
    );
  }
  if (agent.stateTransformed) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `${field}: agent "${agent.name}" shows clients a transformed state (a state transform), so a patch cannot name its stored state; fork without an edit`,
      { details: { field } },
    );
  }
  for (const [name, patch] of [
    ["init.state_patch", edit.statePatch],
    ["init.messages_patch", edit.messagesPatch],
  ] as const) {
    if (patch && patch.length > limits.maxPatchOperations)
      throw new AgentError(
        "RESOURCE_EXHAUSTED",
        `${name} has ${patch.length} operations; the limit is ${limits.maxPatchOperations} (--max-patch-operations): split the edit over several forks`,
        { details: { field: name, maxPatchOperations: limits.maxPatchOperations } },
      );
  }
  return edit;
}

/**
 * `state` with `edit` applied: the custom state patched and checked against
 * `schema`, the history patched in its wire JSON form and each message
 * checked. The argument is left untouched; messages before the first changed
 * one are the same objects. Each patch is applied within `limits` (see
 * `applyBoundedPatch`: operation count, bytes written, depth, plain JSON).
 * Throws INVALID_ARGUMENT naming the failing operation (`init.state_patch[1]`:
 * a path that does not resolve, a failed "test", a value that is not plain
 * JSON, nesting past `maxPatchDepth`) or the failing field (the schema's
 * path, or the message index); RESOURCE_EXHAUSTED naming the limit a patch
 * crosses. No error quotes the state, the history or a patch value.
 */
export function applyInitEdit<S>(
  state: SessionState<S>,
  edit: InitEdit,
  schema?: ZodType<S>,
  limits: InputLimits = DEFAULT_INPUT_LIMITS,
): SessionState<S> {
  const next: SessionState<S> = { ...state };
  if (edit.statePatch) {
    const bounds: PatchBounds = {
      maxOperations: limits.maxPatchOperations,
      maxBytes: limits.maxPatchBytes,
      maxDepth: limits.maxPatchDepth,
    };
    const patched = applyBoundedPatch(
      state.custom === undefined ? null : state.custom,
      edit.statePatch,
      bounds,
      "init.state_patch",
    );
    const custom = schema
      ? validateCustomState(schema, patched, "init.state_patch: the patched custom state fails the state schema")
      : patched;
    if (custom === undefined || custom === null) delete next.custom;
    else next.custom = custom as S;
  }
  if (edit.messagesPatch) {
    const bounds: PatchBounds = {
      maxOperations: limits.maxPatchOperations,
      maxBytes: limits.maxPatchBytes,
      maxDepth: limits.maxPatchDepth + MESSAGE_NESTING,
    };
    next.messages = patchMessages(state.messages, edit.messagesPatch, bounds);
  }
  return next;
}

/** The note the first snapshot after an edit carries: who edited, and the operations. */
export function snapshotEditOf(edit: InitEdit, principal: Principal): SnapshotEdit {
  return {
    by: principal.subject,
    tenant: principal.tenant,
    ...(edit.statePatch ? { statePatch: edit.statePatch } : {}),
    ...(edit.messagesPatch ? { messagesPatch: edit.messagesPatch } : {}),
  };
}

function patchMessages(messages: readonly Message[], patch: JsonPatchOperation[], bounds: PatchBounds): Message[] {
  const before = messages.map(messageToJson);
  const after = applyBoundedPatch(before, patch, bounds, "init.messages_patch");
  if (!Array.isArray(after)) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      "init.messages_patch: the patched history must stay a JSON array of messages",
      {
        details: { field: "init.messages_patch" },
      },
    );
  }
  let shared = 0;
  while (shared < after.length && shared < before.length && sameJson(before[shared], after[shared])) shared++;
  return [
    ...messages.slice(0, shared),
    ...after.slice(shared).map((m, i) => messageFromJson(m, `init.messages_patch: message ${shared + i}`)),
  ];
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
