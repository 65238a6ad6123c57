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
 * The brand every AgentError carries, registered in the global symbol
 * registry so that it is the same symbol in every copy of agentd loaded into
 * one process (the built ESM package and a second copy that a CommonJS
 * `require` of a TypeScript agents module compiles, for example).
 */
const AGENT_ERROR_BRAND: unique symbol = Symbol.for("agentd.AgentError") as never;

/**
 * An error with a gRPC status and a message a user can act on. Everything the
 * runtime and the stores throw on purpose is an AgentError; the server maps
 * `status` to the RPC status code unchanged. `instanceof AgentError` is true
 * for an AgentError of any copy of agentd in the process (it checks a
 * process-wide brand, not the prototype chain), so an agents module that got
 * its own copy of agentd keeps its error codes.
 */
export class AgentError extends Error {
  readonly status: StatusName;
  readonly details?: Record<string, unknown>;
  /** The cross-copy brand (see {@link AgentError}'s `instanceof`). */
  readonly [AGENT_ERROR_BRAND] = true;

  constructor(status: StatusName, message: string, options?: { details?: Record<string, unknown>; cause?: unknown }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = "AgentError";
    this.status = status;
    if (options?.details) this.details = options.details;
  }

  /** True for an AgentError made by any copy of agentd in this process. */
  static [Symbol.hasInstance](value: unknown): value is AgentError {
    return (
      typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[AGENT_ERROR_BRAND] === true
    );
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
