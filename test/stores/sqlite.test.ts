import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteEngine } from "../../stores/sql/sqlite-engine.js";
import { SqlSessionStore } from "../../stores/sql/sql-store.js";
import { runStoreConformance } from "./conformance.js";
import { sqlFootprint } from "./sql-fixtures.js";
import type { CounterState } from "./snapshot-factory.js";

runStoreConformance(
  "sqlite",
  async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-sqlite-store-"));
    const path = join(dir, "agentd.db");
    const store = new SqlSessionStore<CounterState>(new SqliteEngine(path));
    return {
      store,
      openResources: () => store.subscriberCount + store.chunkWatcherCount,
      watchersSettled: () => store.watchersSettled,
      cleanup: () => rm(dir, { recursive: true, force: true }),
      crossProcess: { kind: "sql", uri: `sqlite:${path}` },
      footprint: () => sqlFootprint(store),
    };
  },
  { sharedAcrossProcesses: true },
);
