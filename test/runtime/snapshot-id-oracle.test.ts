// A foreign snapshot ID (another tenant's) and an unknown one must cost the
// same work, so their NOT_FOUND answers cannot be told apart by timing. The
// work is counted, not timed: every store operation the ownership check makes,
// on a real file store (scripts/bench-id-oracle.ts times it).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient, type CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { ownedRecord } from "../../src/runtime/sessions/session-lookup.js";
import { openSqlStore } from "../../stores/sql/sql-store-uri.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { mongoForTests } from "../harness/mongo-java-server.js";
import { newSnapshotId } from "../../stores/snapshot-identity.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { checkpointRecord, commitOf, type CounterState } from "../stores/snapshot-factory.js";

/** `store` with a count of every operation called on it (the operations still run on the real store). */
function counted<T extends object>(store: T): { store: T; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(String(property));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

/** The store operations and the error of an ownership check by `tenant` of `snapshotId`. */
async function lookUp(
  store: SessionStore<CounterState>,
  snapshotId: string,
  tenant: string,
): Promise<{ calls: string[]; error: AgentError }> {
  const spy = counted(store);
  const error = await ownedRecord(spy.store, "counter", snapshotId, { tenant }).then(
    () => {
      throw new Error("the snapshot was found");
    },
    (err: unknown) => err as AgentError,
  );
  return { calls: spy.calls, error };
}

const dirs: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), "agentd-oracle-"));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

let mongo: Awaited<ReturnType<typeof mongoForTests>> | undefined;
afterAll(async () => {
  await mongo?.stop();
});

describe.each([
  [
    "SQLite store",
    async () => (await openSqlStore(`sqlite:${join(tempDir(), "agentd.db")}`)) as unknown as SessionStore<CounterState>,
  ],
  ["memory store (no headOfRecord)", async () => new InMemorySessionStore<CounterState>()],
  [
    "MongoDB store (mongo-java-server)",
    async () => {
      mongo ??= await mongoForTests();
      return new MongoSessionStore<CounterState>({ uri: mongo.uri, database: "agentd_oracle", collectionPrefix: "o_" });
    },
  ],
])("a foreign and an unknown snapshot ID cost the same work: %s", (_name, open) => {
  let store: SessionStore<CounterState>;
  const foreign = newSnapshotId();
  beforeAll(async () => {
    store = await open();
    const record = checkpointRecord("s-acme", foreign);
    const commit = commitOf(undefined, record);
    await store.commit({ ...commit, head: { ...commit.head, owner: "acme" } });
  }, 300_000);
  afterAll(async () => {
    await store.close?.();
  });

  it("makes the same store operations for another tenant's snapshot as for an unknown one, and answers the same NOT_FOUND", async () => {
    const asForeign = await lookUp(store, foreign, "globex");
    const unknownId = newSnapshotId();
    const asUnknown = await lookUp(store, unknownId, "globex");
    expect(asForeign.calls).toEqual(asUnknown.calls);
    expect(asForeign.calls.length).toBeGreaterThan(0);
    expect(asForeign.error.status).toBe("NOT_FOUND");
    expect(asUnknown.error.status).toBe("NOT_FOUND");
    expect(asForeign.error.message.replace(foreign, "ID")).toBe(asUnknown.error.message.replace(unknownId, "ID"));
  });

  it("still finds the owner's own snapshot", async () => {
    const { record, head } = await ownedRecord(store, "counter", foreign, { tenant: "acme" });
    expect(record.snapshotId).toBe(foreign);
    expect(head.owner).toBe("acme");
  });
});

describe("the SQLite store's ownership check", () => {
  it("reads no record of another tenant's snapshot (only the session head)", async () => {
    const store = (await openSqlStore(
      `sqlite:${join(tempDir(), "agentd.db")}`,
    )) as unknown as SessionStore<CounterState>;
    try {
      const id = newSnapshotId();
      const commit = commitOf(undefined, checkpointRecord("s-acme", id));
      await store.commit({ ...commit, head: { ...commit.head, owner: "acme" } });
      const { calls } = await lookUp(store, id, "globex");
      expect(calls).toEqual(["headOfRecord"]);
    } finally {
      await store.close?.();
    }
  });
});

describe("the MongoDB store's ownership check", () => {
  it("sends the same queries for another tenant's snapshot as for an unknown one, none reading the record's state", async () => {
    mongo ??= await mongoForTests();
    const client = new MongoClient(mongo.uri, { monitorCommands: true });
    const commands: string[] = [];
    client.on("commandStarted", (event: CommandStartedEvent) => {
      const command = event.command as { find?: string; projection?: unknown };
      if (event.commandName === "find") commands.push(`${command.find} ${JSON.stringify(command.projection ?? null)}`);
    });
    const store = new MongoSessionStore<CounterState>({ client, database: "agentd_oracle", collectionPrefix: "q_" });
    try {
      const id = newSnapshotId();
      const commit = commitOf(undefined, checkpointRecord("s-acme", id));
      await store.commit({ ...commit, head: { ...commit.head, owner: "acme" } });
      commands.length = 0;
      await lookUp(store, id, "globex");
      const asForeign = commands.splice(0);
      await lookUp(store, newSnapshotId(), "globex");
      expect(asForeign).toEqual(commands);
      expect(asForeign).toEqual([
        'q_snapshots {"sessionId":1}',
        'q_heads {"recentTokens":0,"pendingCommits":0,"fencedTokens":0}',
      ]);
    } finally {
      await store.close?.();
      await client.close();
    }
  }, 300_000);
});
