import { AgentError } from "../errors/agent-error.js";
import type { ToolResume } from "../types/agent-io.js";
import type { Message, ToolRequest } from "../types/content.js";

/**
 * Thrown by `ctx.interrupt(metadata)` inside a tool: the tool loop stops, the
 * turn ends `interrupted`, and the request waits for the client's resume.
 */
export class ToolInterrupt extends Error {
  readonly metadata: Record<string, unknown> | undefined;

  constructor(metadata?: Record<string, unknown>) {
    super("tool interrupted");
    this.name = "ToolInterrupt";
    this.metadata = metadata;
  }
}

/** Metadata key on an interrupted `toolRequest` part (the tool's interrupt metadata, or `true`). */
export const INTERRUPT_KEY = "interrupt";
/** Metadata key on a `toolRequest` part whose tool answered while a sibling interrupted (its output). */
export const PENDING_OUTPUT_KEY = "pendingOutput";
/** Metadata key left on a request once its interrupt has been resolved by a resume. */
export const RESOLVED_INTERRUPT_KEY = "resolvedInterrupt";

/** A tool request of the interrupted model message. */
export interface PendingRequest {
  /** Position of the part in the model message. */
  partIndex: number;
  request: ToolRequest;
  /** True when the request waits for the client; false when its output is already known. */
  interrupted: boolean;
  /** The known output (when not interrupted). */
  output?: unknown;
}

/**
 * The tool requests of `message` when it is an interrupted model message (a
 * model message with at least one `toolRequest` part marked as interrupted),
 * else undefined.
 */
export function pendingRequests(message: Message | undefined): PendingRequest[] | undefined {
  if (message?.role !== "model") return undefined;
  const pending: PendingRequest[] = [];
  message.content.forEach((part, partIndex) => {
    if (!part.toolRequest) return;
    const interrupted = part.metadata?.[INTERRUPT_KEY] !== undefined;
    pending.push({
      partIndex,
      request: part.toolRequest,
      interrupted,
      ...(!interrupted ? { output: part.metadata?.[PENDING_OUTPUT_KEY] } : {}),
    });
  });
  return pending.some((p) => p.interrupted) ? pending : undefined;
}

/** How one interrupted request is continued. */
export type ResumeAction =
  { kind: "respond"; output: unknown } | { kind: "restart"; request: ToolRequest; resumed: unknown };

function describe(request: ToolRequest): string {
  return `${request.name}${request.ref ? ` (ref "${request.ref}")` : ""}`;
}

/**
 * Matches the client's resume parts against the pending requests: each
 * `respond` part (a toolResponse) and `restart` part (a toolRequest) must name
 * an interrupted request by ref and name (a missing ref matches the only
 * interrupted request of that name), each interrupted request must be
 * answered exactly once. Returns the action per interrupted part index.
 * Throws AgentError INVALID_ARGUMENT naming the mismatch otherwise.
 */
export function planResume(pending: PendingRequest[], resume: ToolResume): Map<number, ResumeAction> {
  const actions = new Map<number, ResumeAction>();
  const interrupted = pending.filter((p) => p.interrupted);
  const waiting = interrupted.map((p) => describe(p.request)).join(", ");
  const find = (name: string, ref: string | undefined, what: string): PendingRequest => {
    const candidates = interrupted.filter(
      (p) => p.request.name === name && (ref === undefined || p.request.ref === ref),
    );
    if (candidates.length === 0) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `resume ${what} ${describe({ name, ...(ref ? { ref } : {}) })} matches no pending tool request; pending: ${waiting}`,
      );
    }
    if (candidates.length > 1)
      throw new AgentError(
        "INVALID_ARGUMENT",
        `resume ${what} for "${name}" needs a ref: several requests of that tool are pending (${waiting})`,
      );
    const match = candidates[0]!;
    if (actions.has(match.partIndex))
      throw new AgentError("INVALID_ARGUMENT", `tool request ${describe(match.request)} is answered more than once`);
    return match;
  };
  for (const part of resume.respond ?? []) {
    if (!part.toolResponse)
      throw new AgentError("INVALID_ARGUMENT", "every resume.respond part must be a toolResponse");
    const match = find(part.toolResponse.name, part.toolResponse.ref, "response");
    actions.set(match.partIndex, { kind: "respond", output: part.toolResponse.output });
  }
  for (const part of resume.restart ?? []) {
    if (!part.toolRequest) throw new AgentError("INVALID_ARGUMENT", "every resume.restart part must be a toolRequest");
    const match = find(part.toolRequest.name, part.toolRequest.ref, "restart");
    const request = {
      ...match.request,
      ...(part.toolRequest.input !== undefined ? { input: part.toolRequest.input } : {}),
    };
    actions.set(match.partIndex, { kind: "restart", request, resumed: part.metadata?.["resumed"] ?? true });
  }
  const missing = interrupted.filter((p) => !actions.has(p.partIndex));
  if (missing.length > 0) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `resume leaves tool request(s) unanswered: ${missing.map((p) => describe(p.request)).join(", ")}; respond to or restart every pending request`,
    );
  }
  return actions;
}

/** Error for a new message sent while the last turn waits for a resume. */
export function unresolvedInterruptError(pending: PendingRequest[]): AgentError {
  const waiting = pending
    .filter((p) => p.interrupted)
    .map((p) => describe(p.request))
    .join(", ");
  return new AgentError(
    "INVALID_ARGUMENT",
    `the last turn was interrupted and waits for tool request(s) ${waiting}: continue it with input.resume (respond or restart), not a new message`,
  );
}
