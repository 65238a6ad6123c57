import { Code, ConnectError } from "@connectrpc/connect";
import { AgentError } from "../errors/agent-error.js";
import { codeForStatus } from "../protocol/status-codes.js";
import {
  clientGoneError,
  deadlineError,
  decodeError,
  isClientGoneError,
  isDecodeError,
  shortenDetails,
  shortenMessage,
} from "./call-errors.js";

/** The message sent to clients for errors that are not ours to explain. */
export const INTERNAL_ERROR_MESSAGE = "internal error (see the server log for details)";

/**
 * Turns anything a handler threw into the error the client sees:
 * a ConnectError passes through; an AgentError keeps its status and message
 * (details travel as the `agentd-error-details` response trailer, JSON);
 * anything else becomes INTERNAL with a generic message so internals
 * (paths, stack traces, driver errors) never reach the client. Messages
 * and details are shortened so echoed input (a 100k-character ID) cannot
 * blow up the response trailers (see {@link shortenMessage}).
 */
export function toConnectError(err: unknown): ConnectError {
  releaseStackFrames(err);
  if (err instanceof ConnectError) {
    const message = shortenMessage(err.rawMessage);
    if (message === err.rawMessage) return err;
    return new ConnectError(
      message,
      err.code,
      err.metadata,
      err.details as ConstructorParameters<typeof ConnectError>[3],
      err.cause ?? err,
    );
  }
  if (err instanceof AgentError) {
    const metadata = err.details ? { "agentd-error-details": asciiJson(shortenDetails(err.details)) } : undefined;
    return new ConnectError(shortenMessage(err.message), codeForStatus(err.status), metadata, undefined, err);
  }
  return new ConnectError(INTERNAL_ERROR_MESSAGE, Code.Internal, undefined, undefined, err);
}

/**
 * Like {@link toConnectError}, but first classifies failures that are not the
 * handler's own: a passed deadline (the call's `signal` aborted with
 * DEADLINE_EXCEEDED) ends the call DEADLINE_EXCEEDED whatever the handler
 * threw as a consequence; an undecodable request is INVALID_ARGUMENT; a
 * write to, or read from, a client that went away is CANCELLED.
 */
export function toCallError(err: unknown, signal?: AbortSignal): ConnectError {
  const deadline = deadlineError(signal);
  if (deadline) return deadline;
  // The server's shutdown cancelled the call once the drain grace ran out (its
  // signal aborted with UNAVAILABLE): UNAVAILABLE, whatever the handler threw as a consequence.
  if (signal?.aborted && signal.reason instanceof ConnectError && signal.reason.code === Code.Unavailable)
    return signal.reason;
  if (isDecodeError(err)) return decodeError(err);
  if (!(err instanceof ConnectError) && !(err instanceof AgentError) && isClientGoneError(err))
    return clientGoneError(err);
  if (err instanceof ConnectError && err.code === Code.Internal && isClientGoneError(err.cause))
    return clientGoneError(err);
  return toConnectError(err);
}

/**
 * Formats the stack trace of `err` and of its causes. Until its `stack` is
 * read, V8 keeps an error's call sites, and with them each frame's receiver:
 * an error thrown in the runtime holds the invocation (history, queued
 * inputs) as long as the error lives, and the transport keeps a call's
 * error (its abort reason) while the client holds the stream. Once
 * formatted, only the text remains.
 */
function releaseStackFrames(err: unknown): void {
  const seen = new Set<unknown>();
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    void e.stack;
  }
}

/** JSON with every non-ASCII character escaped (`\uXXXX`): header values must be Latin-1, and we keep them ASCII. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
