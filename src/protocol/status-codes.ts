import { Code } from "@connectrpc/connect";
import type { StatusName } from "../errors/agent-error.js";

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

/** True for the gRPC status names agentd uses (every code but OK). */
export function isStatusName(name: string): name is StatusName {
  return Object.hasOwn(CODE_BY_STATUS, name);
}

/** The Connect code for a gRPC status name. */
export function codeForStatus(status: StatusName): Code {
  return CODE_BY_STATUS[status] ?? Code.Unknown;
}

/** The gRPC status name for a Connect code. */
export function statusForCode(code: Code): StatusName {
  for (const [name, value] of Object.entries(CODE_BY_STATUS)) if (value === code) return name as StatusName;
  return "UNKNOWN";
}
