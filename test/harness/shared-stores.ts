// The stores several agentd processes can share in one test: a fresh SQLite
// file, a fresh schema on a real PostgreSQL server, or a MongoDB
// (mongo-java-server, or MONGODB_URI when set). No file store: it is retired
// (`--store file:` is refused; copy-store still reads it).
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mongoForTests } from "./mongo-java-server.js";
import { freshSchema, postgresForTests } from "./postgres-server.js";

/** A store URI for `--store`, and how to stop what serves it. */
export interface SharedStore {
  uri: string;
  stop(): Promise<void>;
}

/** The kinds of shared store, by name (`describe.each(Object.keys(sharedStores))`). */
export const sharedStores: Record<string, () => Promise<SharedStore>> = {
  sqlite: async () => ({
    uri: `sqlite:${join(await mkdtemp(join(tmpdir(), "agentd-shared-")), "agentd.db")}`,
    stop: async () => {},
  }),
  postgres: async () => {
    const { server, release } = await postgresForTests();
    return { uri: server.uri(freshSchema("e2e")), stop: release };
  },
  mongodb: async () => {
    const mongo = await mongoForTests();
    return { uri: mongo.uri, stop: () => mongo.stop() };
  },
};
