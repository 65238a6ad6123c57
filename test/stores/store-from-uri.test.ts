import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { existsSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { mongoConfigFromUri, openStoreFromUri } from "../../stores/store-from-uri.js";
import { SqlSessionStore } from "../../stores/sql/sql-store.js";

describe("openStoreFromUri", () => {
  it("opens the memory store for memory:", async () => {
    expect(await openStoreFromUri("memory:")).toBeInstanceOf(InMemorySessionStore);
  });

  it("refuses the retired file store with INVALID_ARGUMENT pointing to copy-store, creating nothing", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-uri-"));
    try {
      await expect(openStoreFromUri(`file:${join(dir, "snaps")}`)).rejects.toMatchObject({
        status: "INVALID_ARGUMENT",
        message: expect.stringContaining(`agentd copy-store file:${join(dir, "snaps")} sqlite:`),
      });
      expect(existsSync(join(dir, "snaps"))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("opens the MongoDB store for a mongodb:// URI without connecting", async () => {
    const store = await openStoreFromUri("mongodb://127.0.0.1:1/app?collectionPrefix=t_");
    expect(store).toBeInstanceOf(MongoSessionStore);
    await store.close?.();
  });

  it("rejects an unknown scheme with INVALID_ARGUMENT naming the supported ones", async () => {
    await expect(openStoreFromUri("redis://localhost")).rejects.toMatchObject({
      status: "INVALID_ARGUMENT",
      message: expect.stringContaining("memory:, sqlite:<file>, postgres://user@host/database or mongodb://"),
    });
  });

  it("opens the SQL store on SQLite for sqlite:<file> (relative to the current directory) and on PostgreSQL for postgres://", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-uri-"));
    try {
      const store = await openStoreFromUri(`sqlite:${relative(process.cwd(), join(dir, "db", "agentd.db"))}`);
      expect(store).toBeInstanceOf(SqlSessionStore);
      expect((store as SqlSessionStore).engine).toMatchObject({
        dialect: "sqlite",
        description: join(dir, "db", "agentd.db"),
      });
      await store.close?.();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    for (const uri of ["postgres://u:secret@127.0.0.1:1/app?schema=tenant_a", "postgresql://127.0.0.1:1/app"]) {
      const store = await openStoreFromUri(uri); // no connection until first use
      expect((store as SqlSessionStore).engine.dialect).toBe("postgres");
      expect((store as SqlSessionStore).engine.description).not.toContain("secret");
      await store.close?.();
    }
  });

  it("opens sqlite:<file>?synchronous=normal with the writer connection on synchronous=NORMAL (default FULL)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-uri-"));
    try {
      const pragma = async (uri: string): Promise<number> => {
        const store = (await openStoreFromUri(uri)) as SqlSessionStore;
        try {
          const rows = await store.engine.transaction((tx) => tx.query("PRAGMA synchronous"));
          return Number(rows[0]!.synchronous);
        } finally {
          await store.close();
        }
      };
      const path = join(dir, "agentd.db");
      expect(await pragma(`sqlite:${path}?synchronous=normal`)).toBe(1); // NORMAL
      expect(await pragma(`sqlite:${path}?synchronous=NORMAL`)).toBe(1);
      expect(await pragma(`sqlite:${path}?synchronous=full`)).toBe(2); // FULL
      expect(await pragma(`sqlite:${path}`)).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await expect(openStoreFromUri("sqlite:/tmp/x.db?synchronous=off")).rejects.toMatchObject({
      status: "INVALID_ARGUMENT",
      message: 'store URI "sqlite:/tmp/x.db?synchronous=off": synchronous must be full or normal, not "off"',
    });
    await expect(openStoreFromUri("sqlite:/tmp/x.db?journal=delete")).rejects.toMatchObject({
      status: "INVALID_ARGUMENT",
      message: expect.stringContaining(
        'unknown parameter "journal" (an sqlite: URI takes only synchronous=full|normal)',
      ),
    });
  });

  it("rejects sqlite: without a file and a postgres schema that is not a plain name, with INVALID_ARGUMENT", async () => {
    await expect(openStoreFromUri("sqlite:")).rejects.toMatchObject({
      status: "INVALID_ARGUMENT",
      message: 'store URI "sqlite:" names no database file: use e.g. sqlite:./.agentd/agentd.db',
    });
    await expect(openStoreFromUri("postgres://u:pw@h/db?schema=a;drop")).rejects.toMatchObject({
      status: "INVALID_ARGUMENT",
      message: expect.stringMatching(
        /^invalid schema "a;drop" in store URI "postgres:\/\/u:\*\*\*@h\/db\?schema=a;drop"/,
      ),
    });
  });

  it("takes the database from the URI path and strips collectionPrefix from the driver URI", () => {
    expect(mongoConfigFromUri("mongodb://u:p@h1:1,h2:2/mydb?replicaSet=rs&collectionPrefix=t1_")).toEqual({
      uri: "mongodb://u:p@h1:1,h2:2/mydb?replicaSet=rs",
      database: "mydb",
      collectionPrefix: "t1_",
    });
  });

  it("defaults the database to agentd and the collection prefix to empty", () => {
    expect(mongoConfigFromUri("mongodb+srv://cluster.example")).toEqual({
      uri: "mongodb+srv://cluster.example/",
      database: "agentd",
      collectionPrefix: "",
    });
  });

  it("hands the logger to the MongoDB store, which reports a weakened write concern to it", async () => {
    const warnings: string[] = [];
    const logger = { warn: (_fields: object, message: string) => void warnings.push(message) };
    const store = await openStoreFromUri("mongodb://127.0.0.1:1/app?w=1", { logger: logger as never });
    expect(warnings).toHaveLength(1);
    expect(warnings).toEqual((store as MongoSessionStore).warnings);
    await store.close?.();
  });

  it("rejects a MongoDB URI without a host", () => {
    expect(() => mongoConfigFromUri("mongodb:///agentd")).toThrow(
      expect.objectContaining({
        status: "INVALID_ARGUMENT",
        message: 'invalid MongoDB URI "mongodb:///agentd": no host; use e.g. mongodb://127.0.0.1:27017/agentd',
      }),
    );
  });

  it("rejects a database name MongoDB does not allow", () => {
    for (const name of ["a.b", "a%2Fb", "a%20b", "a$b"]) {
      expect(() => mongoConfigFromUri(`mongodb://h/${name}`)).toThrow(
        expect.objectContaining({
          status: "INVALID_ARGUMENT",
          message: `invalid MongoDB database name "${decodeURIComponent(name)}" in store URI "mongodb://h/${name}"`,
        }),
      );
    }
  });
});
