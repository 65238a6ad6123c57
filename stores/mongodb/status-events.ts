import type { Document } from "mongodb";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import type { StatusObservation } from "../status-channel.js";
import { TERMINAL_EVENTS } from "./stream-endings.js";

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
 * - the events after which the server ends the stream (`invalidate`, `drop`,
 *   `rename`, `dropDatabase`), so the stream knows why it ended and reopens.
 *   (A real server closes the cursor after an invalidate even when a filter
 *   drops it; the stream checks for that too.)
 *
 * The projection keeps what an observation needs, never a record's body.
 */
export const STATUS_PIPELINE: Document[] = [
  {
    $match: {
      $or: [
        { operationType: "insert", "fullDocument.status": { $ne: "completed" } },
        { operationType: "update", "updateDescription.updatedFields.status": { $exists: true } },
        { operationType: "update", updateDescription: { $exists: false }, "fullDocument.status": { $exists: true } },
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
  const fields: StatusFields | undefined = updated ?? (change.fullDocument as StatusFields | null | undefined) ?? undefined;
  const key = (change.documentKey as { _id?: unknown } | undefined)?._id;
  const id = typeof key === "string" ? key : fields?.snapshotId;
  if (typeof id !== "string") return undefined;
  if (typeof fields?.status === "string" && typeof fields.version === "number") {
    return { snapshotId: id, observation: { status: fields.status as SnapshotStatus, version: fields.version } };
  }
  return { snapshotId: id };
}
