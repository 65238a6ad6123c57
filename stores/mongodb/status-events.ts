import type { Document } from "mongodb";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import type { StatusObservation } from "../status-channel.js";
import { endingOfEvent, TERMINAL_EVENTS, type StreamEnding } from "./stream-endings.js";

/**
 * The server-side filter of the status change stream: only status
 * transitions reach an instance, never an ordinary turn or a heartbeat.
 *
 * - `insert` of a record whose status is not `completed` (a pending row a
 *   detached run starts with; completed turns are not status transitions).
 * - `update` whose `updateDescription.updatedFields` holds `status`: the
 *   documented change event of a real MongoDB server. `updateRecord` sets
 *   `status` only when it changes, so heartbeats and other rewrites do not match.
 * - `update` without `updateDescription` but with `fullDocument.status`:
 *   mongo-java-server (the test server) reports no updateDescription; without
 *   `fullDocument: "updateLookup"` its `fullDocument` is the update's `$set`
 *   fields, so it too holds `status` only for status changes. A real server's
 *   update events always carry updateDescription and (without updateLookup)
 *   no fullDocument, so this branch never matches there.
 * - `replace` of a record (the whole document rewritten, e.g. by an operator
 *   restoring it): a real server's replace event always carries the new
 *   document as `fullDocument`, so its status and version are read from there.
 *   The store itself never replaces records, and mongo-java-server reports a
 *   replacement as an update with an empty fullDocument (which no branch
 *   matches), so only a real server takes this branch.
 * - the events after which the server ends the stream (`invalidate`, `drop`,
 *   `rename`, `dropDatabase`), so the stream knows why it ended and reopens.
 *   (A real server closes the cursor after an invalidate even when a filter
 *   drops it; the stream checks for that too.)
 *
 * The projection keeps what an observation needs, never a record's body.
 * {@link classifyChangeEvent} makes the same decision on the client.
 */
export const STATUS_PIPELINE: Document[] = [
  {
    $match: {
      $or: [
        { operationType: "insert", "fullDocument.status": { $ne: "completed" } },
        { operationType: "update", "updateDescription.updatedFields.status": { $exists: true } },
        { operationType: "update", updateDescription: { $exists: false }, "fullDocument.status": { $exists: true } },
        { operationType: "replace", "fullDocument.status": { $exists: true } },
        { operationType: { $in: [...TERMINAL_EVENTS] } },
      ],
    },
  },
  {
    $project: {
      operationType: 1,
      "documentKey._id": 1,
      "fullDocument.snapshotId": 1,
      "fullDocument.status": 1,
      "fullDocument.version": 1,
      "updateDescription.updatedFields.snapshotId": 1,
      "updateDescription.updatedFields.status": 1,
      "updateDescription.updatedFields.version": 1,
    },
  },
];

/** What a change event says about one record: its ID and, when the event carries them, the new status and version. */
export interface StatusEvent {
  snapshotId: string;
  observation?: StatusObservation;
}

interface StatusFields {
  snapshotId?: unknown;
  status?: unknown;
  version?: unknown;
}

/**
 * Reads a (projected) change event of {@link STATUS_PIPELINE}. The record ID
 * comes from `documentKey._id` (a real server) or the `snapshotId` field the
 * store sets with every status change (mongo-java-server reports an update's
 * documentKey as the update itself). Undefined when the event names no record.
 */
export function statusEventOf(change: Document): StatusEvent | undefined {
  const updated = (change.updateDescription as { updatedFields?: StatusFields } | undefined)?.updatedFields;
  const fields: StatusFields | undefined =
    updated ?? (change.fullDocument as StatusFields | null | undefined) ?? undefined;
  const key = (change.documentKey as { _id?: unknown } | undefined)?._id;
  const id = typeof key === "string" ? key : fields?.snapshotId;
  if (typeof id !== "string") return undefined;
  if (typeof fields?.status === "string" && typeof fields.version === "number") {
    return { snapshotId: id, observation: { status: fields.status as SnapshotStatus, version: fields.version } };
  }
  return { snapshotId: id };
}

/** What one change event means to the status stream (see {@link classifyChangeEvent}). */
export type ChangeEventClass =
  /** The server ends the stream after this event (collection dropped or renamed, database dropped, invalidate). */
  | { kind: "ending"; ending: StreamEnding }
  /** A record's status may have changed: deliver the observation, or re-read the record when the event carries none. */
  | { kind: "status"; event: StatusEvent }
  /** Nothing a status subscriber needs (a heartbeat or other rewrite, a completed insert, a delete, other events). */
  | { kind: "ignored" };

/**
 * Classifies a change event of the snapshots collection, whole or projected
 * by {@link STATUS_PIPELINE}, exactly as that pipeline's server-side filter
 * does: `insert` of a record not `completed`, `update` whose
 * `updateDescription.updatedFields` holds `status` (or, without
 * updateDescription, whose `fullDocument` does: mongo-java-server), `replace`
 * whose new `fullDocument` holds a status, and the stream-ending events. A
 * `delete` is ignored (a deleted session's subscribers see no further change).
 * Pure: no I/O.
 */
export function classifyChangeEvent(change: Document): ChangeEventClass {
  const ending = endingOfEvent(change);
  if (ending) return { kind: "ending", ending };
  const full = change.fullDocument as StatusFields | null | undefined;
  const description = change.updateDescription as { updatedFields?: StatusFields } | undefined;
  let relevant: boolean;
  switch (change.operationType) {
    case "insert":
      relevant = full?.status !== "completed";
      break;
    case "update":
      // A real server's update carries updateDescription; mongo-java-server's only fullDocument (the $set fields).
      relevant = description ? description.updatedFields?.status !== undefined : full?.status !== undefined;
      break;
    case "replace":
      relevant = full?.status !== undefined;
      break;
    default:
      relevant = false;
  }
  const event = relevant ? statusEventOf(change) : undefined;
  return event ? { kind: "status", event } : { kind: "ignored" };
}
