import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AgentError } from "../../src/errors/agent-error.js";
import { redactStoreUri } from "../../stores/redact-uri.js";
import { PostgresEngine } from "../../stores/sql/postgres-engine.js";
import { SqlSessionStore } from "../../stores/sql/sql-store.js";
import { freshSchema, postgresForTests, type PostgresServer } from "../harness/postgres-server.js";
import { runStoreConformance } from "./conformance.js";
import { checkpointRecord, commitRecord, eventually, pendingRecord, type CounterState } from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";
import { sqlFootprint } from "./sql-fixtures.js";

let server: PostgresServer;
let release: () => Promise<void>;
beforeAll(async () => {
  ({ server, release } = await postgresForTests());
}, 120_000);
afterAll(() => release?.());

runStoreConformance(
  "postgres",
  async () => {
    const schema = freshSchema();
    const uri = server.uri(schema);
    const store = new SqlSessionStore<CounterState>(
      new PostgresEngine({ connectionString: server.uri(), schema, description: uri }),
    );
    return {
      store,
      openResources: () => store.subscriberCount + store.chunkWatcherCount,
      watchersSettled: () => store.watchersSettled,
      crossProcess: { kind: "sql", uri },
      footprint: () => sqlFootprint(store),
    };
  },
  { sharedAcrossProcesses: true, keepsToolJournal: true },
);

describe("postgres store engine", () => {
  const opened: SqlSessionStore<CounterState>[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
  });
  function open(schema: string): SqlSessionStore<CounterState> {
    const store = new SqlSessionStore<CounterState>(
      new PostgresEngine({ connectionString: server.uri(), schema, description: server.uri(schema) }),
    );
    opened.push(store);
    return store;
  }

  /** A watcher and a writer on a fresh schema, a pending row "bg", and the watcher's status subscription to it. */
  async function watchedPendingRow() {
    const schema = freshSchema();
    const watcher = open(schema);
    const writer = open(schema);
    await commitRecord(writer, undefined, pendingRecord("s1", "bg"));
    return { schema, watcher, writer, ...recordStatuses(watcher, "bg") };
  }

  it("re-reads what it follows when its LISTEN connection is cut, so a change made meanwhile still arrives", async () => {
    const { schema, watcher, writer, seen, stop } = await watchedPendingRow();
    try {
      await eventually(() => seen.length === 1 && watcher.watchersSettled);
      const admin = new pg.Client({ connectionString: server.uri() });
      await admin.connect();
      try {
        // Cut every LISTEN connection of the watcher, then change the status before it reconnects.
        await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN agentd_${schema}%'`,
        );
      } finally {
        await admin.end();
      }
      await writer.updateRecord("bg", (e) => ({ ...e, status: "aborted" }));
      await eventually(() => seen.length === 2);
    } finally {
      await stop();
    }
    expect(seen).toEqual(["pending", "aborted"]);
  });

  it("tells its follower to re-read once LISTEN is up, the first time too: what changed before that sent no notification", async () => {
    const engine = new PostgresEngine({ connectionString: server.uri(), schema: freshSchema(), description: "test" });
    const changes: string[] = [];
    try {
      engine.follow((change) => changes.push(change.kind));
      await eventually(() => engine.following);
      expect(changes).toEqual(["unknown"]);
    } finally {
      await engine.close();
    }
  });

  it("reports its watchers settled only once LISTEN is up, for a status subscription alone", async () => {
    const { watcher, writer, seen, stop } = await watchedPendingRow();
    try {
      expect(watcher.watchersSettled).toBe(false);
      // The first read too, or a slow one would read the change itself (a status delivered once).
      await eventually(() => seen.length === 1 && watcher.watchersSettled);
      await writer.updateRecord("bg", (e) => ({ ...e, status: "aborted" }));
      await eventually(() => seen.length === 2);
    } finally {
      await stop();
    }
    expect(seen).toEqual(["pending", "aborted"]);
  });

  it("answers UNAVAILABLE, naming the database without its password, when PostgreSQL is unreachable", async () => {
    const uri = "postgres://agentd:s3cret@127.0.0.1:1/agentd";
    const store = new SqlSessionStore<CounterState>(
      new PostgresEngine({ connectionString: uri, schema: "public", description: redactStoreUri(uri) }),
    );
    opened.push(store);
    for (const call of [() => store.ready(), () => store.ping(), () => store.getHead("s1")]) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e as AgentError,
      );
      expect(error).toMatchObject({ status: "UNAVAILABLE" });
      expect(error!.message).toContain("postgres://agentd:***@127.0.0.1:1/agentd");
      expect(error!.message).not.toContain("s3cret");
    }
  });

  it("answers INVALID_ARGUMENT, not INTERNAL, for text PostgreSQL cannot hold (a NUL character), and stays usable", async () => {
    const store = open(freshSchema());
    for (const call of [() => store.getHead("s\u0000"), () => store.deleteSession("s\u0000")]) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e as AgentError,
      );
      expect(error).toMatchObject({ status: "INVALID_ARGUMENT" });
      expect(error!.message).toContain("PostgreSQL cannot store this text (it holds a NUL character, U+0000");
    }
    expect(await store.getHead("s")).toBeUndefined();
  });

  it("answers a health ping while every pooled connection is held by a transaction", async () => {
    const schema = freshSchema();
    const store = new SqlSessionStore<CounterState>(
      new PostgresEngine({ connectionString: server.uri(), schema, description: server.uri(schema), poolSize: 1 }),
    );
    opened.push(store);
    await store.ready();
    let finish: () => void = () => {};
    let begun: () => void = () => {};
    const held = new Promise<void>((resolve) => (begun = resolve));
    // The pool's only connection stays in this transaction until the ping has answered.
    const holding = store.engine.transaction(async (tx) => {
      await tx.query("SELECT 1");
      begun();
      await new Promise<void>((resolve) => (finish = resolve));
    });
    await held;
    await store.ping();
    finish();
    await holding;
  });

  it("keeps two schemas of one database apart", async () => {
    const one = open(freshSchema());
    const two = open(freshSchema());
    await commitRecord(one, undefined, checkpointRecord("s1", "snap-1"));
    expect(await two.getHead("s1")).toBeUndefined();
    expect(await two.getRecord("snap-1")).toBeUndefined();
    expect((await one.getHead("s1"))?.headSnapshotId).toBe("snap-1");
  });
});
