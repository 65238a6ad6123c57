import type { Collection, Db, Document } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import { errorCode } from "./mongo-errors.js";

/**
 * Server answers meaning the deployment has no change streams: 40573 ("The
 * $changeStream stage is only supported on replica sets", a standalone
 * mongod) and 40324 (unknown pipeline stage, a server or proxy without
 * `$changeStream`).
 */
const NO_CHANGE_STREAM_CODES: ReadonlySet<number> = new Set([40573, 40324]);

/** True when `err` is a server's answer that it cannot run change streams (a standalone mongod). */
export function isChangeStreamUnsupported(err: unknown): boolean {
  const code = errorCode(err);
  if (code === 40573) return true;
  const message = (err as { message?: unknown } | undefined)?.message;
  return (
    code !== undefined &&
    NO_CHANGE_STREAM_CODES.has(code) &&
    typeof message === "string" &&
    message.includes("$changeStream")
  );
}

/** The FAILED_PRECONDITION error of a store whose deployment cannot run change streams, saying how to fix it. */
export function changeStreamsUnsupported(db: Db, answer: string, cause?: unknown): AgentError {
  return new AgentError(
    "FAILED_PRECONDITION",
    `MongoDB database "${db.databaseName}" cannot run change streams (${answer}). agentd's MongoDB store needs a replica set or a ` +
      `sharded cluster: its change stream carries status changes (detach, abort) between instances. For a single server, run it as a ` +
      `one-member replica set: start mongod with --replSet rs0, run rs.initiate() once in mongosh, and add replicaSet=rs0 to the store URI.`,
    { details: { database: db.databaseName }, ...(cause !== undefined ? { cause } : {}) },
  );
}

/**
 * Opens a change stream on `collection` and closes it again (an aggregate, at
 * most one getMore, a killCursors). Resolves when the deployment serves
 * change streams; rejects FAILED_PRECONDITION when it answers that it cannot
 * (a standalone mongod: error 40573) or returns a stream that is already
 * closed (a server without an oplog). Other errors are rethrown as they are.
 */
export async function assertChangeStreams<T extends Document>(db: Db, collection: Collection<T>): Promise<void> {
  const probe = collection.watch([], { maxAwaitTimeMS: 1 });
  try {
    const first = await probe.tryNext();
    if (first === null && probe.closed)
      throw changeStreamsUnsupported(db, "the server closed a new change stream at once");
  } catch (err) {
    if (err instanceof AgentError) throw err;
    if (isChangeStreamUnsupported(err)) throw changeStreamsUnsupported(db, (err as Error).message, err);
    throw err;
  } finally {
    await probe.close().catch(() => undefined);
  }
}
