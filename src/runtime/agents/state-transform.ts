import { AgentError } from "../../errors/agent-error.js";
import type { AgentStreamChunk } from "../../types/agent-io.js";
import type { Principal } from "../../types/principal.js";
import type { SessionState } from "../../types/session-state.js";

/** Who is asking, passed to transforms (e.g. for RBAC-aware redaction). */
export interface TransformContext {
  /** The agent the state belongs to. */
  agent: string;
  /** Request metadata (headers) when called from the server. */
  headers?: Headers;
  /** The authenticated caller, when the server authenticates (see docs/security.md). */
  principal?: Principal;
}

/** The transform context of a call on `agent` by the caller `call` describes (its headers and principal, when set). */
export function transformContextOf(
  agent: string,
  call: { headers?: Headers; principal?: Principal },
): TransformContext {
  return {
    agent,
    ...(call.headers ? { headers: call.headers } : {}),
    ...(call.principal ? { principal: call.principal } : {}),
  };
}

/**
 * Rewrites session state on its way out to a client (snapshot reads,
 * client-managed output, custom-patch diffs). Receives its own deep copy; may
 * mutate and return it, return a new value, or return null to omit the state.
 * Throwing fails the read or invocation closed with the error's status.
 */
export type StateTransform<S> = (
  state: SessionState<S>,
  ctx: TransformContext,
) => SessionState<S> | null | Promise<SessionState<S> | null>;

/**
 * Rewrites each streamed chunk on its way to the client. Receives its own deep
 * copy; returning null drops the chunk; throwing fails the invocation closed.
 */
export type ChunkTransform = (
  chunk: AgentStreamChunk,
  ctx: TransformContext,
) => AgentStreamChunk | null | Promise<AgentStreamChunk | null>;

/** An agent's client-facing transforms. Never applied to persisted state. */
export interface ClientTransforms<S> {
  state?: StateTransform<S>;
  chunk?: ChunkTransform;
}

/**
 * Applies a state transform to a deep copy of `state`. Resolves to the
 * transformed state, or undefined when the transform omitted it. A throwing
 * transform rejects with an AgentError carrying its status (an AgentError's own
 * status, PERMISSION_DENIED otherwise), so unshaped state never leaks.
 */
export async function applyStateTransform<S>(
  transform: StateTransform<S> | undefined,
  state: SessionState<S>,
  ctx: TransformContext,
): Promise<SessionState<S> | undefined> {
  const copy = structuredClone(state);
  if (!transform) return copy;
  try {
    return (await transform(copy, ctx)) ?? undefined;
  } catch (err) {
    throw transformFailure("state", err);
  }
}

/** Applies a chunk transform to a deep copy of `chunk`; undefined means "drop". Fails closed like applyStateTransform. */
export async function applyChunkTransform(
  transform: ChunkTransform | undefined,
  chunk: AgentStreamChunk,
  ctx: TransformContext,
): Promise<AgentStreamChunk | undefined> {
  if (!transform) return chunk;
  try {
    return (await transform(structuredClone(chunk), ctx)) ?? undefined;
  } catch (err) {
    throw transformFailure("chunk", err);
  }
}

function transformFailure(kind: string, err: unknown): AgentError {
  if (err instanceof AgentError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new AgentError("PERMISSION_DENIED", `${kind} transform failed: ${message}`, { cause: err });
}
