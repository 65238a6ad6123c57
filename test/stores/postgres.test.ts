import { afterAll, beforeAll } from "vitest";
import { PostgresEngine } from "../../stores/sql/postgres-engine.js";
import { SqlSessionStore } from "../../stores/sql/sql-store.js";
import { freshSchema, postgresForTests, type PostgresServer } from "../harness/postgres-server.js";
import { runStoreConformance } from "./conformance.js";
import type { CounterState } from "./snapshot-factory.js";
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
  { sharedAcrossProcesses: true },
);
