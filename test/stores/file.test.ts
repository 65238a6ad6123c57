import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileSessionStore } from "../../stores/file-store.js";
import { runStoreConformance } from "./conformance.js";
import { snapshotRow, type CounterState } from "./snapshot-factory.js";

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), "agentd-file-store-"));
}

runStoreConformance("file", async () => {
  const dir = await tempDir();
  const store = new FileSessionStore<CounterState>(dir);
  return { store, openResources: () => store.activeWatcherCount, cleanup: () => rm(dir, { recursive: true, force: true }) };
});

describe("file store", () => {
  it("creates its directory with mode 0700", async () => {
    const parent = await tempDir();
    const store = new FileSessionStore(join(parent, "nested", "snapshots"));
    expect((await stat(store.directory)).mode & 0o777).toBe(0o700);
    await rm(parent, { recursive: true, force: true });
  });

  it("rejects a maxChainLength below 1", async () => {
    const dir = await tempDir();
    expect(() => new FileSessionStore(dir, { maxChainLength: 0 })).toThrow(/maxChainLength must be an integer >= 1/);
    await rm(dir, { recursive: true, force: true });
  });

  it("keeps only the newest maxChainLength rows of a parentId chain", async () => {
    const dir = await tempDir();
    const store = new FileSessionStore<CounterState>(dir, { maxChainLength: 3 });
    let parentId: string | undefined;
    const ids: string[] = [];
    for (let turn = 0; turn < 6; turn++) {
      const saved = await store.saveSnapshot(undefined, () => snapshotRow("s1", { turnIndex: turn, createdAt: 1000 + turn, ...(parentId ? { parentId } : {}) }));
      parentId = saved!.snapshotId;
      ids.push(parentId);
    }
    const listed = (await store.listSnapshots("s1")).snapshots.map((s) => s.snapshotId);
    expect(listed).toEqual([ids[5], ids[4], ids[3]]);
    expect(await store.getSnapshot(ids[0]!)).toBeUndefined();
    const files = (await readdir(dir)).filter((f) => f.endsWith(".json"));
    expect(files.sort()).toEqual([ids[3], ids[4], ids[5]].map((id) => `${id}.json`).sort());
    await rm(dir, { recursive: true, force: true });
  });

  it("stores each tenant's rows under its own prefix directory", async () => {
    const dir = await tempDir();
    const store = new FileSessionStore<CounterState>(dir, { pathPrefix: (ctx) => `tenants/${ctx.tenant ?? "none"}` });
    await store.saveSnapshot("snap-1", () => snapshotRow("s1"), { tenant: "acme" });
    expect(await store.getSnapshot("snap-1", { tenant: "acme" })).toBeDefined();
    expect(await store.getSnapshot("snap-1", { tenant: "globex" })).toBeUndefined();
    expect(await readdir(join(dir, "tenants", "acme"))).toContain("snap-1.json");
    await rm(dir, { recursive: true, force: true });
  });

  it("rejects a path prefix that climbs out with ..", async () => {
    const dir = await tempDir();
    const store = new FileSessionStore<CounterState>(dir, { pathPrefix: (ctx) => ctx.tenant ?? "" });
    await expect(store.saveSnapshot("snap-1", () => snapshotRow("s1"), { tenant: "../escape" })).rejects.toMatchObject({
      status: "INVALID_ARGUMENT",
    });
    expect(await readdir(join(dir, ".."))).not.toContain("escape");
    await rm(dir, { recursive: true, force: true });
  });

  it("keeps an absolute or dotted path prefix inside the store directory", async () => {
    const dir = await tempDir();
    const store = new FileSessionStore<CounterState>(dir, { pathPrefix: (ctx) => ctx.tenant ?? "" });
    expect(store.baseDir({ tenant: "/etc/passwd" })).toBe(join(dir, "etc", "passwd"));
    expect(store.baseDir({ tenant: ".hidden/a b" })).toBe(join(dir, "%2Ehidden", "a%20b"));
    await rm(dir, { recursive: true, force: true });
  });

  it("rejects a snapshot ID that is not a safe file name", async () => {
    const dir = await tempDir();
    const store = new FileSessionStore<CounterState>(dir);
    await expect(store.saveSnapshot("../x", () => snapshotRow("s1"))).rejects.toMatchObject({ status: "INVALID_ARGUMENT" });
    expect(await store.getSnapshot("../x")).toBeUndefined();
    await rm(dir, { recursive: true, force: true });
  });
});
