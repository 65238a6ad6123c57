import type { AgentError } from "../../errors/agent-error.js";
import type { AgentOutput } from "../../types/agent-io.js";
import type { SessionState } from "../../types/session-state.js";
import type { FinishReason } from "../../types/snapshot.js";
import { addUsage, type Usage } from "../../types/usage.js";
import type { SessionRunner } from "../sessions/session-runner.js";
import type { TurnCommits } from "../sessions/turn-commits.js";
import type { InvocationTurns } from "./invocation-turns.js";
import type { AgentResult } from "../sessions/turn-context.js";
import { applyStateTransform, type StateTransform, type TransformContext } from "../agents/state-transform.js";

/** What an invocation's output is made of. */
export interface OutputParts<S> {
  /** The state the output reports: the last good state after a failure, the current one otherwise. */
  state: SessionState<S>;
  /** True when a store keeps the state (the output then carries no state). */
  serverManaged: boolean;
  stateTransform: StateTransform<S> | undefined;
  transformContext: TransformContext;
  /** What the agent function returned (its overrides of message, artifacts, finish reason). */
  result: AgentResult | void;
  error: AgentError | undefined;
  sessionId: string;
  snapshotId?: string;
  /** The finish reason of the last turn. */
  finishReason: FinishReason;
  usage?: Usage;
}

/**
 * The invocation's output as it leaves the server. With a state transform,
 * the message and artifacts come from the transformed state (none when the
 * transform omits the state), so a redaction cannot be bypassed through the
 * output; a client-managed output carries the transformed state. Without one,
 * the agent's own overrides win, then the last model message and every
 * artifact. Rejects like the transform (fails closed).
 */
export async function shapeOutput<S>(parts: OutputParts<S>): Promise<AgentOutput<S>> {
  const { state, stateTransform, result, error } = parts;
  const shaped =
    parts.serverManaged && !stateTransform
      ? state
      : await applyStateTransform(stateTransform, state, parts.transformContext);
  const lastModel = shaped ? [...shaped.messages].reverse().find((m) => m.role === "model") : undefined;
  const message = stateTransform ? lastModel : (result?.message ?? lastModel);
  const artifacts = stateTransform ? (shaped?.artifacts ?? []) : (result?.artifacts ?? state.artifacts);
  return {
    sessionId: parts.sessionId,
    ...(parts.snapshotId ? { snapshotId: parts.snapshotId } : {}),
    ...(message ? { message } : {}),
    artifacts,
    ...(!parts.serverManaged && shaped ? { state: shaped } : {}),
    finishReason: error ? "failed" : (result?.finishReason ?? parts.finishReason),
    ...(error ? { error: error.toData() } : {}),
    ...(parts.usage ? { usage: parts.usage } : {}),
  };
}

/** What {@link invocationOutput} reads of an invocation whose agent function has returned. */
export interface FinishedInvocation<S> {
  /** True when a store keeps the state. */
  serverManaged: boolean;
  /** The invocation started a new session (no resume point). */
  startsSession: boolean;
  commits: TurnCommits<S> | undefined;
  turns: InvocationTurns<S>;
  runner: SessionRunner<S>;
  stateTransform: StateTransform<S> | undefined;
  transformContext: TransformContext;
  sessionId: string;
  /** The tokens of the turns run. */
  usage: Usage | undefined;
}

/**
 * The output of an invocation that ran to its end (not detached), shaped by
 * {@link shapeOutput}: a retry answered last reports that turn as its first
 * attempt did; a server-managed invocation that started a session and
 * committed no turn (init without input, or a first turn that failed)
 * created nothing and reports no session ID rather than one that reads
 * NOT_FOUND.
 */
export async function invocationOutput<S>(
  inv: FinishedInvocation<S>,
  result: AgentResult | void,
  error: AgentError | undefined,
): Promise<AgentOutput<S>> {
  const createdNothing = inv.serverManaged && inv.startsSession && !inv.commits?.last;
  // A retry answered last (no turn ran after it): the output is that turn's, as its first attempt answered.
  const answered = error ? undefined : await inv.turns.answeredState();
  const snapshotId = inv.turns.answeredSnapshotId ?? inv.commits?.last?.snapshotId;
  // The tokens the output reports: the turns run, plus those of the committed turns answered again.
  const answeredUsage = inv.turns.answeredUsage;
  const usage = answeredUsage ? addUsage(inv.usage, answeredUsage) : inv.usage;
  return shapeOutput({
    state: error ? inv.turns.lastGood : (answered ?? inv.runner.snapshotState()),
    serverManaged: inv.serverManaged,
    stateTransform: inv.stateTransform,
    transformContext: inv.transformContext,
    result: answered ? undefined : result,
    error,
    sessionId: createdNothing ? "" : inv.sessionId,
    ...(snapshotId ? { snapshotId } : {}),
    finishReason: inv.turns.lastFinish,
    ...(usage ? { usage } : {}),
  });
}
