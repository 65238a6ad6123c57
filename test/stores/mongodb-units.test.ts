import { EventEmitter } from "node:events";
import { MongoClient, MongoNetworkError, MongoServerError, type Collection, type Document } from "mongodb";
import { describe, expect, it } from "vitest";
import { isChangeStreamUnsupported } from "../../stores/mongodb/change-stream-support.js";
import { driverUri, uriDatabase } from "../../stores/mongodb/connection-settings.js";
import { consistencyOf } from "../../stores/mongodb/consistency.js";
import { ensureIndexes, sameKeyPattern } from "../../stores/mongodb/index-setup.js";
import { mongoError } from "../../stores/mongodb/mongo-errors.js";
import { watchReconnects } from "../../stores/mongodb/reconnect-watch.js";
import { endingOfError, endingOfEvent } from "../../stores/mongodb/stream-endings.js";

function serverError(code: number, message = `code ${code}`): MongoServerError {
  return new MongoServerError({ message, errmsg: message, code, ok: 0 });
}

/** A stand-in for the driver client's event side: what watchReconnects listens to. */
function fakeClient(): EventEmitter & MongoClient {
  return new EventEmitter() as EventEmitter & MongoClient;
}

function topology(servers: Record<string, string>): unknown {
  return {
    newDescription: { servers: new Map(Object.entries(servers).map(([address, type]) => [address, { type }])) },
  };
}

describe("reconnect watch (connection-pool events → at most one stream reopen)", () => {
  it("makes one call per loss and recovery of the primary, however many pool events the outage produces", () => {
    const client = fakeClient();
    const calls: number[] = [];
    const stop = watchReconnects(client, (lostAt) => calls.push(lostAt));
    client.emit("topologyDescriptionChanged", topology({ "db1:27017": "RSPrimary", "db2:27017": "RSSecondary" }));
    for (let i = 0; i < 5; i++) client.emit("connectionClosed", { address: "db1:27017", reason: "error" });
    client.emit("connectionPoolCleared", { address: "db1:27017" });
    client.emit("connectionCheckOutFailed", { address: "db1:27017", reason: "connectionError" });
    for (let i = 0; i < 5; i++) client.emit("connectionReady", { address: "db1:27017" });
    expect(calls).toHaveLength(1);
    // Idle closes and wait-queue timeouts are no loss.
    client.emit("connectionClosed", { address: "db1:27017", reason: "idle" });
    client.emit("connectionCheckOutFailed", { address: "db1:27017", reason: "timeout" });
    client.emit("connectionReady", { address: "db1:27017" });
    expect(calls).toHaveLength(1);
    stop();
    client.emit("connectionPoolCleared", { address: "db1:27017" });
    client.emit("connectionReady", { address: "db1:27017" });
    expect(calls).toHaveLength(1);
  });

  it("ignores a flapping secondary, and follows the primary across a failover", () => {
    const client = fakeClient();
    const calls: number[] = [];
    watchReconnects(client, (lostAt) => calls.push(lostAt));
    client.emit("topologyDescriptionChanged", topology({ "db1:27017": "RSPrimary", "db2:27017": "RSSecondary" }));
    for (let i = 0; i < 10; i++) {
      client.emit("connectionPoolCleared", { address: "db2:27017" });
      client.emit("connectionReady", { address: "db2:27017" });
    }
    expect(calls).toEqual([]);
    // Failover: db1 is lost (Unknown keeps its standing), db2 becomes primary and is connected to.
    client.emit("connectionPoolCleared", { address: "db1:27017" });
    client.emit("topologyDescriptionChanged", topology({ "db1:27017": "Unknown", "db2:27017": "RSPrimary" }));
    client.emit("connectionReady", { address: "db2:27017" });
    expect(calls).toHaveLength(1);
    // db1 comes back as a secondary: its pool events no longer count.
    client.emit("topologyDescriptionChanged", topology({ "db1:27017": "RSSecondary", "db2:27017": "RSPrimary" }));
    client.emit("connectionPoolCleared", { address: "db1:27017" });
    client.emit("connectionReady", { address: "db1:27017" });
    expect(calls).toHaveLength(1);
  });
});

describe("change stream endings", () => {
  it("resumes from the token only after transient errors", () => {
    expect(endingOfError(new MongoNetworkError("connection reset"))).toMatchObject({ resume: true });
    expect(endingOfError(serverError(11602))).toMatchObject({ resume: true, code: 11602 });
    for (const code of [10334, 260, 280, 286, 2])
      expect([code, endingOfError(serverError(code)).resume]).toEqual([code, false]);
    expect(endingOfError(serverError(10334)).reason).toMatch(/16 MiB/);
    expect(
      endingOfError(serverError(40573, "The $changeStream stage is only supported on replica sets")),
    ).toMatchObject({ resume: false, unsupported: true });
  });

  it("ends on the events after which the server closes the stream", () => {
    for (const type of ["invalidate", "drop", "rename", "dropDatabase"])
      expect(endingOfEvent({ operationType: type })).toMatchObject({ resume: false });
    for (const type of ["insert", "update", "delete"]) expect(endingOfEvent({ operationType: type })).toBeUndefined();
  });

  it("recognises a deployment without change streams by the server's answer", () => {
    expect(
      isChangeStreamUnsupported(serverError(40573, "The $changeStream stage is only supported on replica sets")),
    ).toBe(true);
    expect(isChangeStreamUnsupported(serverError(40324, "Unrecognized pipeline stage name: '$changeStream'"))).toBe(
      true,
    );
    expect(isChangeStreamUnsupported(serverError(40324, "Unrecognized pipeline stage name: '$search'"))).toBe(false);
    expect(isChangeStreamUnsupported(serverError(13))).toBe(false);
  });
});

describe("store settings", () => {
  it("reports every explicit setting weaker than the default, and nothing for stronger ones", () => {
    const weak = consistencyOf(
      new MongoClient("mongodb://h/?w=2&readConcernLevel=available&readPreference=nearest").options,
    );
    expect(weak.warnings.map((w) => w.split(":")[0])).toEqual([
      "the MongoDB store URI sets w=2",
      "the MongoDB store URI sets readConcernLevel=available",
      "the MongoDB store URI sets readPreference=nearest",
    ]);
    const strong = consistencyOf(
      new MongoClient("mongodb://h/?w=majority&wtimeoutMS=0&readConcernLevel=linearizable").options,
    );
    expect(strong.warnings).toEqual([]);
    expect(strong.db.writeConcern).toEqual({ w: "majority", journal: true, wtimeoutMS: 0 });
  });

  it("maps configuration errors to FAILED_PRECONDITION with what to do", () => {
    expect(mongoError(serverError(13, "not authorized on agentd"), "reading").message).toMatch(/readWrite/);
    expect(mongoError(serverError(18), "reading").status).toBe("FAILED_PRECONDITION");
    expect(mongoError(serverError(100), "writing").status).toBe("FAILED_PRECONDITION");
  });

  it("splits the database off the URI without touching credentials or options", () => {
    expect(driverUri("mongodb://u:p%2Fq@h1,h2:27018/tenant?replicaSet=rs0&w=majority")).toBe(
      "mongodb://u:p%2Fq@h1,h2:27018/?replicaSet=rs0&w=majority",
    );
    expect(driverUri("mongodb+srv://cluster0.example.net/agentd")).toBe("mongodb+srv://cluster0.example.net/");
    expect(uriDatabase("mongodb://h/tenant%2Dx?x=1")).toBe("tenant-x");
    expect(uriDatabase("mongodb://h/?x=1")).toBeUndefined();
  });
});

describe("index setup", () => {
  it("compares key patterns by field order and direction", () => {
    expect(sameKeyPattern({ a: 1, b: -1 }, { a: 1, b: -1 })).toBe(true);
    expect(sameKeyPattern({ b: -1, a: 1 }, { a: 1, b: -1 })).toBe(false);
    expect(sameKeyPattern({ a: 1, b: 1 }, { a: 1, b: -1 })).toBe(false);
  });

  it("accepts an index another instance creates under another name at the same moment (IndexOptionsConflict)", async () => {
    const created: string[] = [];
    const racing = {
      collectionName: "snapshots",
      listIndexes: () => ({ toArray: async () => [] }),
      createIndex: async (_key: Document, options: { name: string }) => {
        created.push(options.name);
        throw serverError(85, "Index already exists with a different name: other_name");
      },
    } as unknown as Collection<Document>;
    await expect(
      ensureIndexes(racing, [{ name: "session_turn", key: { sessionId: 1, turnIndex: 1 } }]),
    ).resolves.toBeUndefined();
    expect(created).toEqual(["session_turn"]);
  });
});
