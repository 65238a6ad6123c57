import { AgentError } from "../../src/errors/agent-error.js";

/** MongoDB's duplicate-key error code. */
export const DUPLICATE_KEY = 11000;

/** True when `err` is a duplicate-key error (E11000). */
export function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: unknown } | undefined)?.code === DUPLICATE_KEY;
}

/** Driver error classes that mean "the server could not be reached or went away" (retry later). */
const TRANSIENT_NAMES =
  /^Mongo(Network|NetworkTimeout|ServerSelection|TopologyClosed|NotConnected|PoolClosed|PoolCleared|WaitQueueTimeout|ServerClosed|StalePrimary)Error$|PoolClear|MongoNetwork|MongoServerSelection/;

/** Error labels the driver/server attach to errors a retry may cure. */
const TRANSIENT_LABELS = [
  "RetryableWriteError",
  "TransientTransactionError",
  "ResetPool",
  "SystemOverloadedError",
  "RetryableError",
];

/**
 * Server error codes of a node that is shutting down, stepping down, not (or
 * no longer) primary, still starting, or otherwise briefly unable to serve
 * (the set the drivers' retryability spec and SDAM treat as transient).
 */
const TRANSIENT_CODES: ReadonlySet<number> = new Set([
  6, // HostUnreachable
  64, // WriteConcernFailed (wtimeout: a majority did not acknowledge in time; the write may still replicate)
  7, // HostNotFound
  89, // NetworkTimeout
  91, // ShutdownInProgress
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
  134, // ReadConcernMajorityNotAvailableYet
  133, // FailedToSatisfyReadPreference
  234, // RetryChangeStream
  10058, // LegacyNotPrimary
]);

/** True when `err` (a driver error) is one a client may cure by retrying: the server was unreachable, restarting or stepping down. */
export function isTransientMongoError(err: unknown): boolean {
  if (!err || typeof err !== "object") return false;
  const e = err as {
    name?: unknown;
    code?: unknown;
    hasErrorLabel?: (label: string) => boolean;
    errorLabels?: unknown;
    cause?: unknown;
  };
  const name = typeof e.name === "string" ? e.name : "";
  if (TRANSIENT_NAMES.test(name)) return true;
  if (typeof e.code === "number" && TRANSIENT_CODES.has(e.code)) return true;
  const labels = Array.isArray(e.errorLabels) ? (e.errorLabels as unknown[]) : [];
  for (const label of TRANSIENT_LABELS) {
    if (labels.includes(label)) return true;
    try {
      if (typeof e.hasErrorLabel === "function" && e.hasErrorLabel(label)) return true;
    } catch {
      // not a driver error after all
    }
  }
  // Node socket errors surfacing bare (ECONNRESET, EPIPE, …) and wrapped causes.
  if (
    typeof e.code === "string" &&
    /^(ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|ECONNABORTED)$/.test(e.code)
  )
    return true;
  // A bulk write (insertMany) wraps the driver error that stopped it in a MongoBulkWriteError,
  // which keeps it as errorResponse: a connection reset mid-insertMany is transient like any other.
  const inner = (err as { errorResponse?: unknown }).errorResponse;
  if (inner instanceof Error && inner !== err && isTransientMongoError(inner)) return true;
  if (e.cause && e.cause !== err) return isTransientMongoError(e.cause);
  return false;
}

/** Driver errors raised before a command was sent (no server selected, client or pool closed or cleared). */
const UNSENT_NAMES =
  /^Mongo(ServerSelection|NotConnected|TopologyClosed|PoolClosed|PoolCleared|WaitQueueTimeout)Error$/;

/**
 * True when `err` says the command never reached a server: no server could
 * be selected, the client or its pool is closed or cleared, or the
 * connection for it could not be established (refused, or failed before
 * its handshake). A write that failed so surely did not happen: there is no
 * need to find out whether it landed.
 */
export function isUnsentError(err: unknown): boolean {
  if (!err || typeof err !== "object") return false;
  const e = err as { name?: unknown; code?: unknown; beforeHandshake?: unknown; cause?: { code?: unknown } };
  if (typeof e.name === "string" && UNSENT_NAMES.test(e.name)) return true;
  if (e.beforeHandshake === true) return true;
  return e.code === "ECONNREFUSED" || e.cause?.code === "ECONNREFUSED";
}

/**
 * Server error codes that mean the deployment or the store's settings cannot
 * serve agentd (no retry cures them), with what to do about each.
 */
const CONFIGURATION_ADVICE: ReadonlyMap<number, string> = new Map([
  [
    13,
    "the MongoDB user lacks a privilege agentd needs: grant it readWrite on the store's database (find, insert, update, remove, createIndex, changeStream)",
  ],
  [
    18,
    "MongoDB rejected the credentials of the store URI: check user and password, and authSource (without authSource in the URI a password user is looked up in admin, not in the URI's database)",
  ],
  [
    79,
    "the write concern in the store URI names a tag set the replica set does not define: fix or remove w in the URI",
  ],
  [
    100,
    "the write concern cannot be satisfied by this deployment (e.g. too few data-bearing members): fix or remove w in the URI",
  ],
]);

/** The code of a driver error (a number), or undefined. */
export function errorCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "number" ? code : undefined;
}

/**
 * Maps a driver error to an AgentError with an actionable message (never a
 * bare driver stack): UNAVAILABLE for every transient error (see
 * {@link isTransientMongoError}; clients retry those), FAILED_PRECONDITION
 * for a deployment or configuration agentd cannot work with (missing
 * privileges, bad credentials, an unsatisfiable write concern), INTERNAL
 * otherwise. AgentErrors pass through unchanged.
 */
export function mongoError(err: unknown, action: string): AgentError {
  if (err instanceof AgentError) return err;
  const e = err as { message?: string } | undefined;
  const message = e?.message ?? String(err);
  const advice = CONFIGURATION_ADVICE.get(errorCode(err) ?? -1);
  if (advice)
    return new AgentError("FAILED_PRECONDITION", `MongoDB ${action} failed: ${message}; ${advice}`, { cause: err });
  const transient = isTransientMongoError(err);
  return new AgentError(
    transient ? "UNAVAILABLE" : "INTERNAL",
    `MongoDB ${action} failed: ${message}${transient ? " (check that the server in the store URI is reachable; retry later)" : ""}`,
    { cause: err },
  );
}

/** Runs `op`, mapping any driver error through {@link mongoError}. */
export async function guarded<T>(action: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw mongoError(err, action);
  }
}

/** Randomised, growing pause before retrying after a write conflict (none for the first two attempts). */
export function conflictBackoff(attempt: number): Promise<void> {
  if (attempt < 2) return Promise.resolve();
  const ms = Math.min(50, 2 ** Math.min(attempt, 6)) * Math.random();
  return new Promise((resolve) => setTimeout(resolve, ms));
}
