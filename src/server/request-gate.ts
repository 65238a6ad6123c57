import { ConnectError, type HandlerContext } from "@connectrpc/connect";
import { deadlineError, isDecodeError, reclassifyDecodeErrorInPlace } from "./call-errors.js";
import { callLogKey } from "./call-log.js";
import { statusForCode } from "../protocol/status-codes.js";

/**
 * The connect-es request gate: runs for every call before its body is read.
 * A call whose deadline has already passed (`grpc-timeout: 0n`) ends
 * DEADLINE_EXCEEDED without running. For the rest, it watches the call's
 * signal: connect-es aborts it with the error a call ends with before
 * serialising that error, so an undecodable request (raised as INTERNAL by
 * connect-es, before any interceptor for unary calls) is turned into
 * INVALID_ARGUMENT there, and the outcome is kept for the call's log line.
 */
export function requestGate(context: HandlerContext): void {
  const log = context.values.get(callLogKey);
  const expired = deadlineError(context.signal);
  if (expired) {
    if (log) log.outcome = { code: statusForCode(expired.code), error: expired.rawMessage };
    throw expired;
  }
  const signal = context.signal;
  signal.addEventListener(
    "abort",
    () => {
      const reason: unknown = signal.reason;
      if (!(reason instanceof ConnectError)) return;
      if (isDecodeError(reason)) reclassifyDecodeErrorInPlace(reason);
      if (log) log.outcome = { code: statusForCode(reason.code), error: reason.rawMessage };
    },
    { once: true },
  );
}
