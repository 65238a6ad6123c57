import { EventEmitter } from "node:events";
import {
  MongoBulkWriteError,
  MongoClient,
  MongoNetworkError,
  MongoServerError,
  type Collection,
  type Document,
} from "mongodb";
import { describe, expect, it, vi } from "vitest";
import {
  assertChangeStreams,
  changeStreamsUnsupported,
  isChangeStreamUnsupported,
} from "../../stores/mongodb/change-stream-support.js";
import { driverUri, uriDatabase } from "../../stores/mongodb/connection-settings.js";
import { CHUNK_BYTES, splitCheckpoint } from "../../stores/mongodb/checkpoint-chunks.js";
import { consistencyOf } from "../../stores/mongodb/consistency.js";
import { fromHeadDocument, writeHead, type HeadDocument } from "../../stores/mongodb/head-document.js";
import { ensureIndexes, sameKeyPattern } from "../../stores/mongodb/index-setup.js";
import { isTransientMongoError, isUnsentError, mongoError } from "../../stores/mongodb/mongo-errors.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { watchReconnects } from "../../stores/mongodb/reconnect-watch.js";
import { endingOfError, endingOfEvent } from "../../stores/mongodb/stream-endings.js";
import { freePort } from "../harness/caller-trace.js";

function serverError(code: number, message = `code ${code}`): MongoServerError {
  return new MongoServerError({ message, errmsg: message, code, ok: 0 });
}

/** A stand-in for the driver client's event side: what watchReconnects listens to. */
function fakeClient(): EventEmitter & MongoClient {
  return new EventEmitter() as EventEmitter & MongoClient;
}

/** A client stand-in under watchReconnects, with the loss times of the reopen calls it made and the watch's stop. */
function watchedClient(): { client: EventEmitter & MongoClient; calls: number[]; stop: () => void } {
  const client = fakeClient();
  const calls: number[] = [];
  const stop = watchReconnects(client, (lostAt) => calls.push(lostAt));
  return { client, calls, stop };
}

function topology(servers: Record<string, string>): unknown {
  return {
    newDescription: { servers: new Map(Object.entries(servers).map(([address, type]) => [address, { type }])) },
  };
}

describe("reconnect watch (connection-pool events → at most one stream reopen)", () => {
  it("makes one call per loss and recovery of the primary, however many pool events the outage produces", () => {
    const { client, calls, stop } = watchedClient();
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
    const { client, calls } = watchedClient();
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

describe("reconnect watch: which servers count", () => {
  it("counts every server while no topology event has been seen (a client connected before the store subscribed)", () => {
    const { client, calls } = watchedClient();
    client.emit("connectionPoolCleared", { address: "db1:27017" });
    client.emit("connectionReady", { address: "db1:27017" });
    expect(calls).toHaveLength(1);
  });

  it("does not take a secondary's lost connections for a loss of the primary", () => {
    const { client, calls } = watchedClient();
    client.emit("topologyDescriptionChanged", topology({ "db1:27017": "RSPrimary", "db2:27017": "RSSecondary" }));
    client.emit("connectionPoolCleared", { address: "db2:27017" });
    client.emit("connectionClosed", { address: "db2:27017", reason: "error" });
    client.emit("connectionReady", { address: "db1:27017" });
    expect(calls).toEqual([]);
  });

  it("keeps counting a writable server whose state became Unknown (a missed heartbeat)", () => {
    const { client, calls } = watchedClient();
    client.emit("topologyDescriptionChanged", topology({ "m1:27017": "Mongos", "m2:27017": "Mongos" }));
    client.emit("topologyDescriptionChanged", topology({ "m1:27017": "Unknown", "m2:27017": "Mongos" }));
    client.emit("connectionPoolCleared", { address: "m1:27017" });
    client.emit("connectionReady", { address: "m1:27017" });
    expect(calls).toHaveLength(1);
  });

  it("takes a checkout that failed on a connection error alone for a loss", () => {
    const { client, calls } = watchedClient();
    client.emit("topologyDescriptionChanged", topology({ "db1:27017": "RSPrimary" }));
    client.emit("connectionCheckOutFailed", { address: "db1:27017", reason: "connectionError" });
    client.emit("connectionReady", { address: "db1:27017" });
    expect(calls).toHaveLength(1);
  });

  it("reports when the loss was first seen, not when the connection came back", () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      const { client, calls } = watchedClient();
      vi.setSystemTime(1_000);
      client.emit("connectionClosed", { address: "db1:27017", reason: "error" });
      vi.setSystemTime(2_000);
      client.emit("connectionPoolCleared", { address: "db1:27017" });
      vi.setSystemTime(3_000);
      client.emit("connectionReady", { address: "db1:27017" });
      expect(calls).toEqual([1_000]);
    } finally {
      vi.useRealTimers();
    }
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

  it("recognises a standalone server by its code 40573 whatever the message says", () => {
    expect(isChangeStreamUnsupported(serverError(40573, "only supported on replica sets"))).toBe(true);
  });

  it("does not take another error about a $changeStream (e.g. missing privileges) for a deployment without change streams", () => {
    expect(
      isChangeStreamUnsupported(
        serverError(
          13,
          "not authorized on agentd to execute command { aggregate: 1, pipeline: [ { $changeStream: {} } ] }",
        ),
      ),
    ).toBe(false);
    expect(isChangeStreamUnsupported(new Error("$changeStream failed"))).toBe(false);
  });

  it("explains what the store needs from a deployment without change streams, naming the database", () => {
    const db = new MongoClient("mongodb://h/").db("tenant_a");
    const cause = serverError(40573);
    const err = changeStreamsUnsupported(db, "the server said no", cause);
    expect(err.status).toBe("FAILED_PRECONDITION");
    expect(err.message).toMatch(/^MongoDB database "tenant_a" cannot run change streams \(the server said no\)/);
    expect(err.message).toMatch(/replica set or a sharded cluster: its change stream carries status changes/);
    expect(err.message).toMatch(/--replSet rs0.*rs\.initiate\(\).*replicaSet=rs0/);
    expect(err.details).toEqual({ database: "tenant_a" });
    expect(err.cause).toBe(cause);
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
      "the MongoDB store URI sets readPreference=nearest, which agentd overrides",
    ]);
    const strong = consistencyOf(
      new MongoClient("mongodb://h/?w=majority&wtimeoutMS=0&readConcernLevel=majority").options,
    );
    expect(strong.warnings).toEqual([]);
    expect(strong.db.writeConcern).toEqual({ w: "majority", journal: true, wtimeoutMS: 0 });
  });

  it("reads from the primary whatever readPreference the URI sets, naming the override in its warning", () => {
    const settings = consistencyOf(new MongoClient("mongodb://h/?readPreference=secondaryPreferred").options);
    expect(settings.db.readPreference).toBe("primary");
    expect(settings.warnings).toEqual([
      expect.stringMatching(
        /readPreference=secondaryPreferred, which agentd overrides: every store read goes to the primary/,
      ),
    ]);
  });

  it.each(["linearizable", "snapshot"])("refuses readConcernLevel=%s at start with INVALID_ARGUMENT", (level) => {
    expect(() => consistencyOf(new MongoClient(`mongodb://h/?readConcernLevel=${level}`).options)).toThrow(
      expect.objectContaining({
        status: "INVALID_ARGUMENT",
        message: expect.stringMatching(
          new RegExp(`readConcernLevel=${level}, which agentd cannot use: .*remove readConcernLevel`),
        ),
      }),
    );
  });

  it("refuses unacknowledged writes (w=0), saying to remove w from the URI", () => {
    expect(() => consistencyOf(new MongoClient("mongodb://h/?w=0").options)).toThrow(
      expect.objectContaining({
        status: "INVALID_ARGUMENT",
        message: expect.stringMatching(
          /sets w=0 .*: remove w from the URI \(agentd writes with w=majority, journaled\)$/,
        ),
      }),
    );
  });

  it("maps configuration errors to FAILED_PRECONDITION with what to do", () => {
    expect(mongoError(serverError(13, "not authorized on agentd"), "reading").message).toMatch(/readWrite/);
    expect(mongoError(serverError(18), "reading").status).toBe("FAILED_PRECONDITION");
    expect(mongoError(serverError(100), "writing").status).toBe("FAILED_PRECONDITION");
  });

  it("maps errors a retry may cure to UNAVAILABLE, saying to check the server and retry", () => {
    const err = mongoError(new MongoNetworkError("connection reset"), "reading");
    expect(err.status).toBe("UNAVAILABLE");
    expect(err.message).toBe(
      "MongoDB reading failed: connection reset (check that the server in the store URI is reachable; retry later)",
    );
    expect(mongoError(serverError(10107, "not primary"), "writing").status).toBe("UNAVAILABLE");
  });

  it("maps any other driver error to INTERNAL, with its message and without retry advice", () => {
    const cause = serverError(2, "bad value");
    const err = mongoError(cause, "writing");
    expect(err.status).toBe("INTERNAL");
    expect(err.message).toBe("MongoDB writing failed: bad value");
    expect(err.cause).toBe(cause);
  });

  it("maps a thrown value that is not an object to INTERNAL", () => {
    expect(mongoError("boom", "reading")).toMatchObject({
      status: "INTERNAL",
      message: "MongoDB reading failed: boom",
    });
    expect(isTransientMongoError(undefined)).toBe(false);
  });

  it("treats an error carrying a retryable label as transient, also as a plain server reply", () => {
    expect(isTransientMongoError({ message: "write failed", errorLabels: ["RetryableWriteError"] })).toBe(true);
    expect(isTransientMongoError({ message: "write failed", errorLabels: ["SomeOtherLabel"] })).toBe(false);
    const labelled = serverError(2, "overloaded");
    labelled.addErrorLabel("SystemOverloadedError");
    expect(mongoError(labelled, "reading").status).toBe("UNAVAILABLE");
  });

  it("treats the Node socket errors (exactly those codes) as transient", () => {
    for (const code of ["ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN"])
      expect([code, isTransientMongoError(Object.assign(new Error(code), { code }))]).toEqual([code, true]);
    for (const code of ["ECONNRESET_X", "X_EPIPE", "EACCES"])
      expect([code, isTransientMongoError(Object.assign(new Error(code), { code }))]).toEqual([code, false]);
  });

  it("treats an insertMany cut by a connection reset (a MongoBulkWriteError around a network error) as transient", () => {
    const cut = new MongoBulkWriteError(new MongoNetworkError("connect ECONNRESET 127.0.0.1:1"), {} as never);
    expect(mongoError(cut, "appending chunks").status).toBe("UNAVAILABLE");
    const rejected = new MongoBulkWriteError(serverError(2, "bad value"), {} as never);
    expect(mongoError(rejected, "appending chunks").status).toBe("INTERNAL");
  });

  it("classifies a wrapping error by its cause, and stops at an error that is its own cause", () => {
    const wrapped = new Error("request failed", { cause: new MongoNetworkError("socket hang up") });
    expect(mongoError(wrapped, "reading").status).toBe("UNAVAILABLE");
    expect(isTransientMongoError(new Error("request failed", { cause: serverError(2) }))).toBe(false);
    const selfCaused = new Error("loop");
    (selfCaused as { cause?: unknown }).cause = selfCaused;
    expect(isTransientMongoError(selfCaused)).toBe(false);
  });

  it("passes an AgentError through unchanged", () => {
    const original = mongoError(serverError(18), "reading");
    expect(mongoError(original, "writing")).toBe(original);
  });

  it("splits the database off the URI without touching credentials or options", () => {
    expect(driverUri("mongodb://u:p%2Fq@h1,h2:27018/tenant?replicaSet=rs0&w=majority")).toBe(
      "mongodb://u:p%2Fq@h1,h2:27018/?replicaSet=rs0&w=majority",
    );
    expect(driverUri("mongodb+srv://cluster0.example.net/agentd")).toBe("mongodb+srv://cluster0.example.net/");
    expect(uriDatabase("mongodb://h/tenant%2Dx?x=1")).toBe("tenant-x");
    expect(uriDatabase("mongodb://h/?x=1")).toBeUndefined();
  });
  it("reads no database from a URI without a path, and adds the path the driver expects", () => {
    expect(uriDatabase("mongodb://h:27017")).toBeUndefined();
    expect(driverUri("mongodb://h:27017")).toBe("mongodb://h:27017/");
    expect(driverUri("mongodb://u:p@h1,h2:27017")).toBe("mongodb://u:p@h1,h2:27017/");
  });
});

describe("index setup", () => {
  it("compares key patterns by field order and direction", () => {
    expect(sameKeyPattern({ a: 1, b: -1 }, { a: 1, b: -1 })).toBe(true);
    expect(sameKeyPattern({ b: -1, a: 1 }, { a: 1, b: -1 })).toBe(false);
    expect(sameKeyPattern({ a: 1, b: 1 }, { a: 1, b: -1 })).toBe(false);
  });

  it("does not take a key pattern for one that extends it", () => {
    expect(sameKeyPattern({ a: 1 }, { a: 1, b: -1 })).toBe(false);
  });

  it("matches no key pattern against a missing one", () => {
    expect(sameKeyPattern(undefined, { a: 1 })).toBe(false);
    expect(sameKeyPattern({ a: 1 }, undefined)).toBe(false);
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

  it("creates a sparse spec's index sparse, and takes an existing sparse or plain one on its keys, but not a unique or partial one", async () => {
    const spec = { name: "lease_expires_at", key: { "lease.expiresAt": 1 }, sparse: true } as const;
    const collectionWith = (indexes: Document[], created: Document[] = []) =>
      ({
        collectionName: "heads",
        listIndexes: () => ({ toArray: async () => indexes }),
        createIndex: async (key: Document, options: Document) => {
          created.push({ key, ...options });
        },
      }) as unknown as Collection<Document>;
    const created: Document[] = [];
    await ensureIndexes(collectionWith([], created), [spec]);
    expect(created).toEqual([{ key: { "lease.expiresAt": 1 }, name: "lease_expires_at", sparse: true }]);
    for (const existing of [{ sparse: true }, {}, { sparse: false }]) {
      const none: Document[] = [];
      await ensureIndexes(collectionWith([{ name: "ops", key: { "lease.expiresAt": 1 }, ...existing }], none), [spec]);
      expect(none).toEqual([]);
    }
    for (const [existing, named] of [
      [{ unique: true }, "unique"],
      [{ sparse: true, partialFilterExpression: { lease: { $exists: true } } }, "partialFilterExpression"],
    ] as const) {
      await expect(
        ensureIndexes(collectionWith([{ name: "ops", key: { "lease.expiresAt": 1 }, ...existing }]), [spec]),
      ).rejects.toMatchObject({
        status: "FAILED_PRECONDITION",
        message: expect.stringContaining(`has an index "ops" on {"lease.expiresAt":1} with ${named};`),
      });
    }
    // A plain spec still refuses an existing sparse index (it would miss documents).
    await expect(
      ensureIndexes(collectionWith([{ name: "ops", key: { sessionId: 1 }, sparse: true }]), [
        { name: "chunk_session", key: { sessionId: 1 } },
      ]),
    ).rejects.toMatchObject({ status: "FAILED_PRECONDITION", message: expect.stringContaining("with sparse;") });
  });
});

describe("checkpoint chunks", () => {
  it("splits a checkpoint of exactly one chunk's size into one chunk", () => {
    const json = "x".repeat(CHUNK_BYTES);
    const { ref, documents } = splitCheckpoint(json, "s1");
    expect(ref).toMatchObject({ count: 1, bytes: CHUNK_BYTES });
    expect(documents.map((d) => [d._id, d.seq, d.data.length])).toEqual([[`${ref.set}:0`, 0, CHUNK_BYTES]]);
  });

  it("splits by UTF-8 bytes, not characters, and the pieces join back to the checkpoint", () => {
    const json = "é".repeat(CHUNK_BYTES / 2 + 1); // 2 bytes each: one byte over a chunk
    const { ref, documents } = splitCheckpoint(json, "s1");
    expect(ref).toMatchObject({ count: 2, bytes: CHUNK_BYTES + 2 });
    expect(documents.map((d) => [d.seq, d.data.length, d.sessionId, d.set])).toEqual([
      [0, CHUNK_BYTES, "s1", ref.set],
      [1, 2, "s1", ref.set],
    ]);
    expect(Buffer.concat(documents.map((d) => d.data)).toString("utf8")).toBe(json);
  });
});

describe("head documents", () => {
  it("reads a head stored with null optional fields (older documents) as a head without them", () => {
    const doc = {
      _id: "s1",
      agent: "a",
      owner: "o",
      headSnapshotId: "r0",
      turnCount: 1,
      version: 1,
      createdAt: 1,
      updatedAt: 2,
      lease: null,
      waiters: null,
      ttlMs: null,
      expiresAt: null,
      usage: null,
    } as unknown as HeadDocument;
    expect(fromHeadDocument(doc)).toEqual({
      sessionId: "s1",
      agent: "a",
      owner: "o",
      headSnapshotId: "r0",
      turnCount: 1,
      version: 1,
      createdAt: 1,
      updatedAt: 2,
    });
  });

  it("rejects with the driver's error, not a lost compare-and-set, when creating a head fails for another reason than an existing one", async () => {
    const client = new MongoClient(`mongodb://127.0.0.1:${await freePort()}/?directConnection=true`, {
      serverSelectionTimeoutMS: 200,
    });
    try {
      const head = { sessionId: "s1", agent: "a", owner: "o", headSnapshotId: "r0", turnCount: 1, version: 1 };
      await expect(
        writeHead(client.db("x").collection<HeadDocument>("heads"), { ...head, createdAt: 1, updatedAt: 1 }, 0, "t1"),
      ).rejects.toMatchObject({ name: "MongoServerSelectionError" });
    } finally {
      await client.close();
    }
  });
});

describe("errors of writes that surely did not happen (isUnsentError)", () => {
  it("counts a refused connection and a failed server selection as unsent", async () => {
    const client = new MongoClient(`mongodb://127.0.0.1:${await freePort()}/?directConnection=true`, {
      serverSelectionTimeoutMS: 200,
    });
    try {
      const err = await client
        .db("x")
        .collection("c")
        .insertOne({ a: 1 })
        .catch((e: unknown) => e);
      expect(isUnsentError(err)).toBe(true);
    } finally {
      await client.close();
    }
    const refused = new MongoNetworkError("connect ECONNREFUSED 127.0.0.1:1", {
      cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }),
    });
    expect(isUnsentError(refused)).toBe(true);
  });

  it("does not count a reset connection, a write-concern error or a step-down as unsent (their write may have happened)", () => {
    const reset = new MongoNetworkError("read ECONNRESET", {
      cause: Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }),
    });
    expect(isUnsentError(reset)).toBe(false);
    expect(isUnsentError(new MongoServerError({ code: 64, errmsg: "waiting for replication timed out" }))).toBe(false);
    expect(isUnsentError(new MongoServerError({ code: 189, errmsg: "primary stepped down" }))).toBe(false);
  });
});

describe("change stream probe", () => {
  it("rejects with the driver's error, not FAILED_PRECONDITION, when the probe fails for another reason than missing change streams", async () => {
    const client = new MongoClient(`mongodb://127.0.0.1:${await freePort()}/?directConnection=true`, {
      serverSelectionTimeoutMS: 200,
    });
    try {
      const db = client.db("x");
      await expect(assertChangeStreams(db, db.collection("snapshots"))).rejects.toMatchObject({
        name: "MongoServerSelectionError",
      });
    } finally {
      await client.close();
    }
  });
});

describe("store construction and closed stores (no server needed)", () => {
  it("needs a uri or a client (INVALID_ARGUMENT saying so)", () => {
    expect(() => new MongoSessionStore({})).toThrow(
      expect.objectContaining({
        status: "INVALID_ARGUMENT",
        message: "MongoSessionStore needs a uri (mongodb://host/db) or a client",
      }),
    );
  });

  it("keeps its sessions in the database agentd when neither the config nor the URI names one", async () => {
    const store = new MongoSessionStore({ uri: "mongodb://127.0.0.1:1" });
    expect(store.databaseName).toBe("agentd");
    await store.close();
  });

  it("rejects every operation of a closed store with FAILED_PRECONDITION saying it is closed", async () => {
    const store = new MongoSessionStore({ uri: "mongodb://127.0.0.1:1/agentd" });
    await store.close();
    const closed = { status: "FAILED_PRECONDITION", message: "the MongoDB session store is closed" };
    await expect(store.getHead("s1")).rejects.toMatchObject(closed);
    await expect(store.ready()).rejects.toMatchObject(closed);
    await expect(store.ping()).rejects.toMatchObject(closed);
  });

  it("refuses a sweep without an epoch-millisecond now (INVALID_ARGUMENT naming the value)", async () => {
    const store = new MongoSessionStore({ uri: "mongodb://127.0.0.1:1/agentd?serverSelectionTimeoutMS=200" });
    try {
      for (const now of [Number.NaN, Number.POSITIVE_INFINITY, "1700000000000" as unknown as number])
        await expect(store.sweepExpired(now)).rejects.toMatchObject({
          status: "INVALID_ARGUMENT",
          message: `sweepExpired: now must be an epoch-millisecond number (got ${String(now)})`,
        });
    } finally {
      await store.close();
    }
  });
});
