// The session head's running token totals (`SessionHead.usage`, optional) are persisted
// by every store: written with a commit, read back by getHead and listHeads, removed
// when a later head leaves them out.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqlStore } from "../../stores/sql/sql-store-uri.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import type { SessionHead, SessionStore, SnapshotRecord } from "../../stores/snapshot-store.js";
import { uuidv7 } from "../../stores/uuid-v7.js";
import { mongoForTests } from "../harness/mongo-java-server.js";

const USAGE = { inputTokens: 12, outputTokens: 34, totalTokens: 46 };

function record(sessionId: string): SnapshotRecord {
  const now = Date.now();
  return {
    snapshotId: uuidv7(),
    sessionId,
    turnIndex: 0,
    createdAt: now,
    updatedAt: now,
    status: "completed",
    finishReason: "stop",
    usage: { inputTokens: 2, outputTokens: 3, totalTokens: 5 },
    checkpoint: { sessionId, messages: [], artifacts: [] },
    depth: 0,
    deltaBytes: 0,
    checkpointBytes: 2,
    checkpointTurn: 0,
  };
}

function head(sessionId: string, snapshotId: string, extra: Partial<SessionHead> = {}): Omit<SessionHead, "version"> {
  const now = Date.now();
  return {
    sessionId,
    agent: "assistant",
    owner: "",
    headSnapshotId: snapshotId,
    turnCount: 1,
    createdAt: now,
    updatedAt: now,
    ...extra,
  };
}

async function roundTrip(store: SessionStore): Promise<void> {
  const sessionId = uuidv7();
  const first = record(sessionId);
  const created = await store.commit({
    expectedVersion: 0,
    head: head(sessionId, first.snapshotId, { usage: USAGE }),
    record: first,
  });
  expect(created?.usage).toEqual(USAGE);
  expect((await store.getHead(sessionId))?.usage).toEqual(USAGE);
  expect((await store.getRecord(first.snapshotId))?.usage).toEqual({ inputTokens: 2, outputTokens: 3, totalTokens: 5 });
  const listed = await store.listHeads!({ owner: "" });
  expect(listed.heads.find((h) => h.sessionId === sessionId)?.usage).toEqual(USAGE);
  const { version: _version, usage: _usage, ...rest } = created!;
  const cleared = await store.commit({ expectedVersion: created!.version, head: rest });
  expect(cleared).toBeDefined();
  expect((await store.getHead(sessionId))?.usage).toBeUndefined();
}

describe("SessionHead.usage is persisted", () => {
  it("by the memory store", async () => {
    await roundTrip(new InMemorySessionStore());
  });

  it("by the SQLite store (read back after a reopen)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-head-usage-"));
    const store = await openSqlStore(`sqlite:${join(dir, "agentd.db")}`);
    try {
      await roundTrip(store);
      const reopened = await openSqlStore(`sqlite:${join(dir, "agentd.db")}`);
      const [headOnDisk] = (await reopened.listHeads({ owner: "" })).heads;
      expect(headOnDisk?.usage).toBeUndefined(); // the last write cleared it
      await reopened.close();
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe("by the MongoDB store", () => {
    let mongo: Awaited<ReturnType<typeof mongoForTests>>;
    beforeAll(async () => {
      mongo = await mongoForTests();
    }, 300_000);
    afterAll(async () => {
      await mongo?.stop();
    });

    it("(usage stored with the head document, and unset when a head leaves it out)", async () => {
      const store = new MongoSessionStore({
        uri: mongo.uri,
        database: "agentd_test",
        collectionPrefix: `u${randomBytes(5).toString("hex")}_`,
      });
      try {
        await roundTrip(store);
      } finally {
        await store.close();
      }
    });
  });
});
