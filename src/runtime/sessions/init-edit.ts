import fastJsonPatch, { type Operation } from "fast-json-patch";
import type { ZodType } from "zod";
import { AgentError } from "../../errors/agent-error.js";
import { messageFromJson, messageToJson } from "../../protocol/message-json.js";
import type { JsonPatchOperation } from "../../types/agent-io.js";
import type { Message } from "../../types/content.js";
import type { AgentInit, SessionState } from "../../types/session-state.js";
import type { Principal } from "../../types/principal.js";
import type { SnapshotEdit } from "../../types/snapshot.js";
import { validateCustomState } from "../agents/custom-state-schema.js";

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
 * before anything is read or held: FAILED_PRECONDITION for a client-managed
 * agent (it sends its state: edit that instead) or an agent with a state
 * transform (clients see a transformed state, so a patch cannot name the
 * stored one); INVALID_ARGUMENT for a new session (neither session_id nor
 * snapshot_id: there is no past to edit).
 */
export function initEditOf(agent: EditTarget, init: AgentInit<unknown>): InitEdit | undefined {
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
  return edit;
}

/**
 * `state` with `edit` applied: the custom state patched and checked against
 * `schema`, the history patched in its wire JSON form and each message
 * checked. The argument is left untouched; messages before the first changed
 * one are the same objects. Throws INVALID_ARGUMENT naming the failing
 * operation (`init.state_patch[1]`: a path that does not resolve, a failed
 * "test") or the failing field (the schema's path, or the message index).
 */
export function applyInitEdit<S>(state: SessionState<S>, edit: InitEdit, schema?: ZodType<S>): SessionState<S> {
  const next: SessionState<S> = { ...state };
  if (edit.statePatch) {
    const patched = applyPatch(state.custom === undefined ? null : state.custom, edit.statePatch, "init.state_patch");
    const custom = schema
      ? validateCustomState(schema, patched, "init.state_patch: the patched custom state fails the state schema")
      : patched;
    if (custom === undefined || custom === null) delete next.custom;
    else next.custom = custom as S;
  }
  if (edit.messagesPatch) next.messages = patchMessages(state.messages, edit.messagesPatch);
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

function patchMessages(messages: readonly Message[], patch: JsonPatchOperation[]): Message[] {
  const before = messages.map(messageToJson);
  const after = applyPatch(before, patch, "init.messages_patch");
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

/**
 * `document` with `patch` applied (both left untouched). A failing operation is
 * INVALID_ARGUMENT naming it: `<field>[i] (op path): why`.
 */
function applyPatch(document: unknown, patch: JsonPatchOperation[], field: string): unknown {
  try {
    const copy = structuredClone(document);
    return fastJsonPatch.applyPatch(copy, structuredClone(patch) as Operation[], true, true).newDocument;
  } catch (err) {
    if (!(err instanceof fastJsonPatch.JsonPatchError)) throw AgentError.from(err, "INVALID_ARGUMENT");
    const index = err.index ?? 0;
    const op = patch[index];
    const what = op ? ` (${op.op} "${op.path}")` : "";
    throw new AgentError("INVALID_ARGUMENT", `${field}[${index}]${what}: ${PATCH_ERRORS[err.name] ?? err.message}`, {
      details: { field: `${field}[${index}]`, reason: err.name },
    });
  }
}

/** What fast-json-patch's error names mean, for the caller. */
const PATCH_ERRORS: Readonly<Record<string, string>> = {
  TEST_OPERATION_FAILED: 'the "test" failed: the value at the path differs',
  OPERATION_PATH_UNRESOLVABLE: "the path does not exist",
  OPERATION_FROM_UNRESOLVABLE: '"from" names a path that does not exist',
  OPERATION_PATH_ILLEGAL_ARRAY_INDEX: "the path has an invalid array index",
  OPERATION_VALUE_OUT_OF_BOUNDS: "the array index is out of bounds",
  OPERATION_VALUE_REQUIRED: "the operation needs a value",
  OPERATION_PATH_INVALID: "the path is not a JSON Pointer",
  OPERATION_OP_INVALID: "unknown op",
};

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
