import { randomBytes } from "node:crypto";
import {
  MongoClient,
  Timestamp,
  type ChangeStreamDeleteDocument,
  type ChangeStreamDocument,
  type ChangeStreamDropDocument,
  type ChangeStreamInsertDocument,
  type ChangeStreamInvalidateDocument,
  type ChangeStreamReplaceDocument,
  type ChangeStreamUpdateDocument,
  type Db,
  type Document,
} from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RecordDocument } from "../../stores/mongodb/record-document.js";
import { classifyChangeEvent, STATUS_PIPELINE, type ChangeEventClass } from "../../stores/mongodb/status-events.js";
import { mongoForTests } from "../harness/mongo-java-server.js";

// Which change events of the snapshots collection the status stream acts on. The events below
// have the shapes the MongoDB manual documents for each operationType ("Change Events") and the
// driver declares (ChangeStream*Document), as a real replica set sends them without
// `fullDocument: "updateLookup"`; the last two are what mongo-java-server sends instead (an update
// without updateDescription whose fullDocument is the update's $set fields). mongo-java-server
// also reports a whole-document replacement as such an update, with an empty fullDocument, so the
// `replace` branch a real server takes is checked here: on the shapes, and through the pipeline's
// $match evaluated by the server's query engine.

type Omitted<T> = Omit<T, "collectionUUID">; // only present with showExpandedEvents (not used)

const NS = { db: "agentd", coll: "agentd_snapshots" };
let tokens = 0;
/** The fields every documented event carries: resume token, cluster time, wall time. */
function common(): { _id: { _data: string }; clusterTime: Timestamp; wallTime: Date } {
  tokens++;
  return {
    _id: { _data: `8266${String(tokens).padStart(4, "0")}` },
    clusterTime: new Timestamp({ t: 1_700_000_000, i: tokens }),
    wallTime: new Date(1_700_000_000_000),
  };
}

/** A record document as the store writes it. */
function recordDoc(status: RecordDocument["status"], version: number): RecordDocument {
  return {
    _id: "snap-1",
    snapshotId: "snap-1",
    version,
    sessionId: "s1",
    createdAt: 1_700_000_000_000,
    turnIndex: 0,
    status,
    parentId: null,
    body: JSON.stringify({ snapshotId: "snap-1", status }),
    state: null,
    checkpointChunks: null,
  } as RecordDocument;
}

const pendingInsert: Omitted<ChangeStreamInsertDocument<RecordDocument>> = {
  ...common(),
  operationType: "insert",
  ns: NS,
  documentKey: { _id: "snap-1" },
  fullDocument: recordDoc("pending", 1),
};

const completedInsert: Omitted<ChangeStreamInsertDocument<RecordDocument>> = {
  ...common(),
  operationType: "insert",
  ns: NS,
  documentKey: { _id: "snap-1" },
  fullDocument: recordDoc("completed", 1),
};

const statusUpdate: Omitted<ChangeStreamUpdateDocument<RecordDocument>> = {
  ...common(),
  operationType: "update",
  ns: NS,
  documentKey: { _id: "snap-1" },
  updateDescription: {
    updatedFields: { status: "aborted", version: 4, snapshotId: "snap-1", body: "{}" },
    removedFields: [],
    truncatedArrays: [],
  },
};

const heartbeatUpdate: Omitted<ChangeStreamUpdateDocument<RecordDocument>> = {
  ...common(),
  operationType: "update",
  ns: NS,
  documentKey: { _id: "snap-1" },
  updateDescription: { updatedFields: { version: 3, body: "{}" }, removedFields: ["state"], truncatedArrays: [] },
};

const statusReplace: ChangeStreamReplaceDocument<RecordDocument> = {
  ...common(),
  operationType: "replace",
  ns: NS,
  documentKey: { _id: "snap-1" },
  fullDocument: recordDoc("failed", 7),
};

const foreignReplace: ChangeStreamReplaceDocument<{ _id: string; note: string }> = {
  ...common(),
  operationType: "replace",
  ns: NS,
  documentKey: { _id: "snap-1" },
  fullDocument: { _id: "snap-1", note: "not a record: no status" },
};

const deleted: Omitted<ChangeStreamDeleteDocument<RecordDocument>> = {
  ...common(),
  operationType: "delete",
  ns: NS,
  documentKey: { _id: "snap-1" },
};

const invalidate: ChangeStreamInvalidateDocument = { ...common(), operationType: "invalidate" };

const dropped: Omitted<ChangeStreamDropDocument> = { ...common(), operationType: "drop", ns: NS };

/** mongo-java-server's update event: no updateDescription, fullDocument = the $set fields. */
const javaServerStatusUpdate: Document = {
  ...common(),
  operationType: "update",
  ns: NS,
  documentKey: { $set: { status: "completed" } },
  fullDocument: { status: "completed", version: 5, snapshotId: "snap-1", body: "{}" },
};

const javaServerHeartbeat: Document = {
  ...common(),
  operationType: "update",
  ns: NS,
  documentKey: { $set: { version: 2 } },
  fullDocument: { version: 2, body: "{}" },
};

/** A status update by a writer that did not set snapshotId with it: the record is named by documentKey alone. */
const statusUpdateWithoutSnapshotId: Omitted<ChangeStreamUpdateDocument<RecordDocument>> = {
  ...common(),
  operationType: "update",
  ns: NS,
  documentKey: { _id: "snap-1" },
  updateDescription: { updatedFields: { status: "aborted", version: 6 }, removedFields: [], truncatedArrays: [] },
};

/** An update without updateDescription whose documentKey names the record but whose fields hold no status. */
const keyedUpdateWithoutStatus: Document = {
  ...common(),
  operationType: "update",
  ns: NS,
  documentKey: { _id: "snap-1" },
  fullDocument: { version: 8, body: "{}" },
};

const status = (status: string, version: number): ChangeEventClass => ({
  kind: "status",
  event: { snapshotId: "snap-1", observation: { status: status as RecordDocument["status"], version } },
});
const ignored: ChangeEventClass = { kind: "ignored" };
const ending = { kind: "ending", ending: expect.objectContaining({ resume: false }) };

const CASES: [string, ChangeStreamDocument | Document, unknown][] = [
  ["insert of a pending record", pendingInsert, status("pending", 1)],
  ["insert of a completed record (an ordinary turn)", completedInsert, ignored],
  ["update whose updatedFields hold status", statusUpdate, status("aborted", 4)],
  ["update of other fields only (a heartbeat)", heartbeatUpdate, ignored],
  ["replace whose new document holds a status", statusReplace, status("failed", 7)],
  ["replace by a document without status", foreignReplace, ignored],
  ["delete", deleted, ignored],
  ["invalidate", invalidate, ending],
  ["drop", dropped, ending],
  [
    "update without updateDescription holding status (mongo-java-server)",
    javaServerStatusUpdate,
    status("completed", 5),
  ],
  ["update without updateDescription, other fields only (mongo-java-server)", javaServerHeartbeat, ignored],
  ["update whose updatedFields hold status but no snapshotId", statusUpdateWithoutSnapshotId, status("aborted", 6)],
  ["update without updateDescription naming the record, other fields only", keyedUpdateWithoutStatus, ignored],
];

describe("classifyChangeEvent (documented change-event shapes)", () => {
  it.each(CASES)("classifies %s", (_name, change, expected) => {
    expect(classifyChangeEvent(change as Document)).toEqual(expected);
  });
});

describe("the status stream's server-side filter on a MongoDB server", () => {
  let mongo: Awaited<ReturnType<typeof mongoForTests>>;
  let raw: MongoClient;
  let db: Db;
  beforeAll(async () => {
    mongo = await mongoForTests();
    raw = new MongoClient(mongo.uri);
    db = raw.db("agentd_status_events");
  }, 300_000);
  afterAll(async () => {
    await raw?.close();
    await mongo?.stop();
  });

  it("passes exactly the events classifyChangeEvent acts on, projected to what it needs to classify them", async () => {
    // The events stored as documents and run through STATUS_PIPELINE with aggregate: the same
    // $match and $project a change stream applies to them on a real replica set.
    const events = db.collection(`events_${randomBytes(4).toString("hex")}`);
    await events.insertMany(CASES.map(([, change]) => ({ ...change }) as Document));
    const passed = await events.aggregate(STATUS_PIPELINE).toArray();
    const tokenOf = (e: Document): string => (e._id as { _data: string })._data;
    const acted = CASES.filter(([, change]) => classifyChangeEvent(change as Document).kind !== "ignored");
    expect(passed.map(tokenOf).sort()).toEqual(acted.map(([, change]) => tokenOf(change as Document)).sort());
    for (const projected of passed) {
      const [name, , expected] = CASES.find(([, change]) => tokenOf(change as Document) === tokenOf(projected))!;
      expect(classifyChangeEvent(projected), name).toEqual(expected);
      expect(JSON.stringify(projected), name).not.toContain("body"); // never a record's body
    }
  });
});
