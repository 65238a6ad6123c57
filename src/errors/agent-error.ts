/**
 * Canonical gRPC status names used for every agentd error, in the runtime, the
 * stores and on the wire.
 */
export type StatusName =
  | "CANCELLED"
  | "UNKNOWN"
  | "INVALID_ARGUMENT"
  | "DEADLINE_EXCEEDED"
  | "NOT_FOUND"
  | "ALREADY_EXISTS"
  | "PERMISSION_DENIED"
  | "RESOURCE_EXHAUSTED"
  | "FAILED_PRECONDITION"
  | "ABORTED"
  | "OUT_OF_RANGE"
  | "UNIMPLEMENTED"
  | "INTERNAL"
  | "UNAVAILABLE"
  | "DATA_LOSS"
  | "UNAUTHENTICATED";

/** The serialisable form of an {@link AgentError}, as stored on snapshots and sent in outputs. */
export interface AgentErrorData {
  status: StatusName;
  message: string;
  details?: Record<string, unknown>;
}

/**
 * An error with a gRPC status and a message a user can act on. Everything the
 * runtime and the stores throw on purpose is an AgentError; the server maps
 * `status` to the RPC status code unchanged.
 */
export class AgentError extends Error {
  readonly status: StatusName;
  readonly details?: Record<string, unknown>;

  constructor(status: StatusName, message: string, options?: { details?: Record<string, unknown>; cause?: unknown }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = "AgentError";
    this.status = status;
    if (options?.details) this.details = options.details;
  }

  /** The serialisable form, for snapshots and outputs. */
  toData(): AgentErrorData {
    return { status: this.status, message: this.message, ...(this.details ? { details: this.details } : {}) };
  }

  /** Rebuilds an AgentError from its serialisable form. */
  static fromData(data: AgentErrorData): AgentError {
    return new AgentError(data.status, data.message, data.details ? { details: data.details } : undefined);
  }

  /**
   * Wraps any thrown value: an AgentError passes through; anything else becomes
   * `fallback` (default INTERNAL) carrying the original message.
   */
  static from(err: unknown, fallback: StatusName = "INTERNAL"): AgentError {
    if (err instanceof AgentError) return err;
    if (err instanceof Error && err.name === "AbortError")
      return new AgentError("CANCELLED", err.message, { cause: err });
    const message = err instanceof Error ? err.message : String(err);
    return new AgentError(fallback, message, { cause: err });
  }
}
