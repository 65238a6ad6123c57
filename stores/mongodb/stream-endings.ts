import type { Document } from "mongodb";
import { isChangeStreamUnsupported } from "./change-stream-support.js";
import { errorCode, isTransientMongoError } from "./mongo-errors.js";

/**
 * Why a change stream stopped delivering, and whether it may be reopened
 * from its resume token. Reopening from the token is only safe after a
 * transient failure (network, failover): after an invalidating event or a
 * server-closed cursor the token leads back to the same end, and after an
 * oversized event it leads back to the same event, forever. Every other
 * ending reopens from "now"; the re-read of the subscribed records after
 * each reopen covers what happened in between.
 */
export interface StreamEnding {
  /** Human-readable cause, for the log line. */
  reason: string;
  /** True: reopen with `resumeAfter` the last resume token. */
  resume: boolean;
  /** The server's error code, when an error ended it. */
  code?: number;
  /** The deployment cannot run change streams at all (a standalone mongod). */
  unsupported?: boolean;
}

/**
 * Change events after which the server ends the stream: the watched
 * collection was dropped or renamed, or its database dropped (a real server
 * follows these with `invalidate` and closes the cursor).
 */
export const TERMINAL_EVENTS: ReadonlySet<string> = new Set(["invalidate", "drop", "rename", "dropDatabase"]);

/** Server errors meaning the resume token can never be used again. */
const UNRESUMABLE_CODES: ReadonlySet<number> = new Set([
  260, // InvalidResumeToken
  280, // ChangeStreamFatalError
  286, // ChangeStreamHistoryLost
]);

/** BSONObjectTooLarge: an event over 16 MiB (MongoDB before 6.0.7 cannot split it). */
export const BSON_OBJECT_TOO_LARGE = 10334;

/** The ending a terminal change event means, or undefined for an ordinary event. */
export function endingOfEvent(change: Document): StreamEnding | undefined {
  const type = change.operationType;
  if (typeof type !== "string" || !TERMINAL_EVENTS.has(type)) return undefined;
  return {
    reason: `"${type}" event (the watched collection was dropped or renamed, or its database dropped)`,
    resume: false,
  };
}

/** The ending of a stream whose cursor the server closed without an error (tryNext returns null for ever). */
export function closedByServer(): StreamEnding {
  return { reason: "the server closed the change stream's cursor", resume: false };
}

/** The ending an error thrown by the stream means (see {@link StreamEnding} for when it resumes). */
export function endingOfError(err: unknown): StreamEnding {
  const code = errorCode(err);
  const message = (err as { message?: unknown } | undefined)?.message;
  const text = typeof message === "string" ? message : String(err);
  const withCode = code !== undefined ? { code } : {};
  if (code === BSON_OBJECT_TOO_LARGE || /BSONObjectTooLarge/.test(text)) {
    return {
      reason: `a change event exceeded MongoDB's 16 MiB limit (BSONObjectTooLarge): ${text}`,
      resume: false,
      ...withCode,
    };
  }
  if (isChangeStreamUnsupported(err))
    return {
      reason: `the deployment cannot run change streams: ${text}`,
      resume: false,
      unsupported: true,
      ...withCode,
    };
  if (code !== undefined && UNRESUMABLE_CODES.has(code))
    return { reason: `the resume token cannot be used again: ${text}`, resume: false, ...withCode };
  if (isTransientMongoError(err)) return { reason: `transient error: ${text}`, resume: true, ...withCode };
  return { reason: `error: ${text}`, resume: false, ...withCode };
}
