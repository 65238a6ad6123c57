import { v7 as uuidv7 } from "uuid";
import type { ZodType } from "zod";
import { AgentError } from "../errors/agent-error.js";
import type { AgentInit, SessionState } from "../types/session-state.js";
import { emptySessionState } from "../types/session-state.js";
import type { SessionSnapshot } from "../types/snapshot.js";
import type { SessionStore, StoreCallContext } from "../../stores/snapshot-store.js";
import { validateCustomState } from "./custom-state-schema.js";
import { readSnapshotRef } from "./snapshot-access.js";
import { effectiveStatus, type LivenessSettings } from "./snapshot-liveness.js";

/** Where an invocation starts: the state and the lineage it continues. */
export interface ResolvedStart<S> {
  state: SessionState<S> & { sessionId: string };
  /** The snapshot this invocation continues (server-managed resume). */
  parent?: SessionSnapshot<S>;
  /** Index the first turn of this invocation gets. */
  nextTurnIndex: number;
}

/** What init resolution needs to know about the agent. */
export interface InitTarget<S> {
  name: string;
  store?: SessionStore<S>;
  stateSchema?: ZodType<S>;
  liveness: LivenessSettings;
}

/**
 * Validates `init` against the agent's state management (spec S3) and loads the
 * resume point (S5). Throws AgentError: INVALID_ARGUMENT for state combined with
 * IDs, a session/snapshot mismatch or custom state failing the schema;
 * FAILED_PRECONDITION for a mode mismatch or a non-completed resume point;
 * NOT_FOUND for an unknown session or snapshot.
 */
export async function resolveInit<S>(agent: InitTarget<S>, init: AgentInit<S>, ctx?: StoreCallContext): Promise<ResolvedStart<S>> {
  const sessionId = init.sessionId || undefined;
  const snapshotId = init.snapshotId || undefined;
  if (init.state && (sessionId || snapshotId)) {
    throw new AgentError("INVALID_ARGUMENT", "init: state cannot be combined with session_id or snapshot_id; send one conversation source");
  }
  const store = agent.store;
  if (!store) {
    if (sessionId || snapshotId) {
      throw new AgentError(
        "FAILED_PRECONDITION",
        `agent "${agent.name}" is client-managed (it has no store): send the state from the previous output instead of session_id/snapshot_id`,
      );
    }
    return { state: clientState(agent, init.state), nextTurnIndex: countUserTurns(init.state) };
  }
  if (init.state) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `agent "${agent.name}" keeps conversation state on the server: resume with session_id or snapshot_id instead of sending state`,
    );
  }
  if (!sessionId && !snapshotId) {
    return { state: { ...emptySessionState<S>(), sessionId: uuidv7() }, nextTurnIndex: 0 };
  }
  const parent = await readSnapshotRef(store, { snapshotId, sessionId }, ctx);
  const status = effectiveStatus(parent, agent.liveness);
  if (status !== "completed") {
    const hint = parent.parentId ? ` (its parent is "${parent.parentId}")` : "";
    throw new AgentError(
      "FAILED_PRECONDITION",
      `snapshot "${parent.snapshotId}" is ${status}: only completed snapshots can be resumed; resume from an earlier snapshot${hint}`,
    );
  }
  const loaded = parent.state ?? emptySessionState<S>();
  const state = { messages: loaded.messages ?? [], artifacts: loaded.artifacts ?? [], custom: loaded.custom, sessionId: parent.sessionId };
  return { state, parent, nextTurnIndex: parent.turnIndex + 1 };
}

function clientState<S>(agent: InitTarget<S>, state: SessionState<S> | undefined): SessionState<S> & { sessionId: string } {
  const sessionId = state?.sessionId || uuidv7();
  const custom = state?.custom !== undefined && agent.stateSchema ? validateCustomState(agent.stateSchema, state.custom, "init.state.custom") : state?.custom;
  return { sessionId, messages: state?.messages ?? [], artifacts: state?.artifacts ?? [], ...(custom !== undefined ? { custom } : {}) };
}

function countUserTurns(state: SessionState<unknown> | undefined): number {
  return (state?.messages ?? []).filter((m) => m.role === "user").length;
}
