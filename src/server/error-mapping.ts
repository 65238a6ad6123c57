import { Code, ConnectError } from "@connectrpc/connect";
import { AgentError, type StatusName } from "../errors/agent-error.js";

/** gRPC status name → Connect code (the numeric values are the gRPC codes). */
const CODE_BY_STATUS: Record<StatusName, Code> = {
  CANCELLED: Code.Canceled,
  UNKNOWN: Code.Unknown,
  INVALID_ARGUMENT: Code.InvalidArgument,
  DEADLINE_EXCEEDED: Code.DeadlineExceeded,
  NOT_FOUND: Code.NotFound,
  ALREADY_EXISTS: Code.AlreadyExists,
  PERMISSION_DENIED: Code.PermissionDenied,
  RESOURCE_EXHAUSTED: Code.ResourceExhausted,
  FAILED_PRECONDITION: Code.FailedPrecondition,
  ABORTED: Code.Aborted,
  OUT_OF_RANGE: Code.OutOfRange,
  UNIMPLEMENTED: Code.Unimplemented,
  INTERNAL: Code.Internal,
  UNAVAILABLE: Code.Unavailable,
  DATA_LOSS: Code.DataLoss,
  UNAUTHENTICATED: Code.Unauthenticated,
};

/** The message sent to clients for errors that are not ours to explain. */
export const INTERNAL_ERROR_MESSAGE = "internal error (see the server log for details)";

/** The Connect code for a gRPC status name. */
export function codeForStatus(status: StatusName): Code {
  return CODE_BY_STATUS[status] ?? Code.Unknown;
}

/** The gRPC status name for a Connect code. */
export function statusForCode(code: Code): StatusName {
  for (const [name, value] of Object.entries(CODE_BY_STATUS)) if (value === code) return name as StatusName;
  return "UNKNOWN";
}

/**
 * Turns anything a handler threw into the error the client sees:
 * a ConnectError passes through; an AgentError keeps its status and message
 * (details travel as the `agentd-error-details` response trailer, JSON);
 * anything else becomes INTERNAL with a generic message so internals
 * (paths, stack traces, driver errors) never reach the client.
 */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  if (err instanceof AgentError) {
    const metadata = err.details ? { "agentd-error-details": JSON.stringify(err.details) } : undefined;
    return new ConnectError(err.message, codeForStatus(err.status), metadata, undefined, err);
  }
  return new ConnectError(INTERNAL_ERROR_MESSAGE, Code.Internal, undefined, undefined, err);
}
