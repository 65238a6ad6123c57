// copy-store's library part (stores/copy/): copying every session between two real stores
// through the store contract, resuming a copy cut short, refusing a destination that holds
// something else, and scanHeads, which enumerates a source.
import { afterEach, describe, expect, it } from "vitest";
import { copySession } from "../../stores/copy/copy-session.js";
import { copyStore } from "../../stores/copy/copy-store.js";
import { digestOf, readSessionContent } from "../../stores/copy/session-content.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import type { HeadCommit, SessionStore } from "../../stores/snapshot-store.js";
import { openSqlStore } from "../../stores/sql/sql-store-uri.js";
import { join } from "node:path";
import { expectSameSessions, populate } from "./copy-fixtures.js";
import { useTempDirs } from "./os-fixtures.js";

const tempDir = useTempDirs("agentd-copy-store-");
const opened: SessionStore[] = [];

afterEach(async () => {
  for (const store of opened.splice(0)) await store.close?.();
});

/** An SQLite store in `dir` (closed after the test); opened again on the same file, it reads what was written. */
async function sqliteStore(dir: string): Promise<SessionStore> {
  const store = await openSqlStore(`sqlite:${join(dir, "agentd.db")}`);
  opened.push(store);
  return store;
}

/** A real store whose commits fail after `allowed` of them: a copy process dying mid-session. */
function dyingAfter(store: SessionStore, allowed: number): SessionStore {
  let left = allowed;
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === "commit")
        return (commit: HeadCommit) => {
          if (left-- <= 0) return Promise.reject(new Error("the copy process died"));
          return target.commit(commit);
        };
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe("copyStore", () => {
  it("copies every session of every owner, every record, state and webhook event, and verifies each", async () => {
    const source = new InMemorySessionStore();
    const populated = await populate(source, 60);
    const copy = await sqliteStore(await tempDir());
    const seen: string[] = [];
    const report = await copyStore(source, copy, { onSession: (c) => seen.push(c.sessionId) });
    expect(report).toMatchObject({
      sessions: 60,
      copied: 60,
      completed: 0,
      unchanged: 0,
      records: populated.records,
      written: populated.records,
      failures: [],
      webhooks: { events: 3, pending: 3, written: 3 },
    });
    expect(seen.sort()).toEqual(populated.sessionIds);
    expect(await expectSameSessions(source, copy, populated)).toBeGreaterThan(180);

    // A second run finds everything there and writes nothing.
    const again = await copyStore(source, copy);
    expect(again).toMatchObject({ sessions: 60, unchanged: 60, written: 0, failures: [], webhooks: { written: 0 } });
  });

  it("finishes a session a dead copy left half written, without duplicating a record", async () => {
    const source = new InMemorySessionStore();
    const populated = await populate(source, 1);
    const sessionId = populated.sessionIds[0]!; // s00000: 3 turns, a fork and a detached row
    const dir = await tempDir();
    const head = (await source.getHead(sessionId))!;
    await expect(copySession(source, dyingAfter(await sqliteStore(dir), 2), head)).rejects.toThrow(
      "the copy process died",
    );
    const half = await sqliteStore(dir);
    const partial = await readSessionContent(half, (await half.getHead(sessionId))!);
    expect(partial.records).toHaveLength(2);
    // The interrupted copy left a consistent session: its head names a record it holds.
    expect(partial.records.map((r) => r.snapshotId)).toContain(partial.head.headSnapshotId);

    const done = await copySession(source, half, head);
    expect(done).toMatchObject({ outcome: "completed", written: populated.records - 2, records: populated.records });
    expect(done.checksum).toBe(digestOf(await readSessionContent(source, head)).checksum);
    await expectSameSessions(source, half, { ...populated, webhookEvents: [] }); // copySession copies no outbox
  });

  it("rewrites a record the destination holds with other contents (changed at the source since)", async () => {
    const source = new InMemorySessionStore();
    const populated = await populate(source, 1);
    const copy = new InMemorySessionStore();
    await copyStore(source, copy);
    await source.updateRecord("s00000-bg", (r) => ({ ...r, status: "completed", updatedAt: r.updatedAt + 1 }));
    const report = await copyStore(source, copy);
    expect(report).toMatchObject({ completed: 1, written: 1, failures: [] });
    expect((await copy.getRecord("s00000-bg"))?.status).toBe("completed");
    await expectSameSessions(source, copy, populated);
  });

  it("refuses, naming the session, a destination session of another owner or with records the source lacks", async () => {
    const source = new InMemorySessionStore();
    await populate(source, 2);
    const copy = new InMemorySessionStore();
    await populate(copy, 1, "s"); // s00000 exists there: same records…
    await copy.commit({
      expectedVersion: (await copy.getHead("s00000"))!.version,
      head: { ...(await copy.getHead("s00000"))!, headSnapshotId: "stray-1", turnCount: 9 },
      record: { ...(await copy.getRecord("s00000-t0"))!, snapshotId: "stray-1" },
    }); // …plus one the source does not have
    const other = new InMemorySessionStore();
    await populate(other, 2, "s");
    const stolen = (await other.getHead("s00001"))!;
    await other.commit({ expectedVersion: stolen.version, head: { ...stolen, owner: "someone-else" } });
    for (const [destination, message] of [
      [copy, /^session s00000: the destination holds snapshot stray-1, which the source does not/],
      [other, /^session s00001: the destination holds a session of this ID for another agent or owner/],
    ] as const) {
      const report = await copyStore(source, destination);
      expect(report.failures).toEqual([
        { sessionId: expect.any(String), status: "FAILED_PRECONDITION", message: expect.stringMatching(message) },
      ]);
      expect(report.sessions - report.failures.length).toBe(1); // the other session was still copied
    }
    expect((await other.getHead("s00001"))!.owner).toBe("someone-else"); // nothing overwritten
  });

  it("fails with DATA_LOSS naming the session when the destination does not give back what was written", async () => {
    const source = new InMemorySessionStore();
    await populate(source, 2);
    const real = new InMemorySessionStore();
    // A destination that loses the usage of what it stores (a store with a lossy encoding).
    const lossy = new Proxy(real, {
      get(target, key) {
        if (key === "listRecords")
          return async (...args: Parameters<SessionStore["listRecords"]>) => {
            const page = await target.listRecords(...args);
            return { ...page, records: page.records.map(({ usage: _usage, ...r }) => r) };
          };
        const value = Reflect.get(target, key) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as SessionStore;
    const report = await copyStore(source, lossy);
    expect(report.failures.map((f) => [f.sessionId, f.status])).toEqual([
      ["s00000", "DATA_LOSS"],
      ["s00001", "DATA_LOSS"],
    ]);
    expect(report.failures[0]!.message).toMatch(
      /^session s00000: the copy does not verify \(source 5 records, sha256 [0-9a-f]{64}; destination 5 records, sha256 [0-9a-f]{64}\)$/,
    );
  });

  it("stops with FAILED_PRECONDITION when the source's scan does not move past its cursor", async () => {
    const source = new InMemorySessionStore();
    await populate(source, 201); // more than one scan page
    const stuck = new Proxy(source, {
      get(target, key) {
        if (key === "scanHeads")
          return (_after: string | undefined, limit: number) => target.scanHeads(undefined, limit);
        const value = Reflect.get(target, key) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as SessionStore;
    await expect(copyStore(stuck, new InMemorySessionStore())).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringContaining("returned session s00199 again"),
    });
  });

  it("refuses a source that cannot enumerate its sessions", async () => {
    const source = new InMemorySessionStore();
    const blind = new Proxy(source, {
      get: (t, k) => (k === "scanHeads" ? undefined : (Reflect.get(t, k) as unknown)),
    }) as SessionStore;
    await expect(copyStore(blind, new InMemorySessionStore())).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringContaining("no scanHeads"),
    });
  });
});

describe("scanHeads", () => {
  for (const [name, make] of [
    ["memory", async () => new InMemorySessionStore()],
    ["sqlite", async () => sqliteStore(await tempDir())],
  ] as const) {
    it(`${name}: every head of every owner once, sessionId ascending, in pages`, async () => {
      const store: SessionStore = await make();
      const populated = await populate(store, 23);
      const seen: string[] = [];
      let after: string | undefined;
      for (let pages = 0; pages < 10; pages++) {
        const page = await store.scanHeads!(after, 5);
        seen.push(...page.map((h) => h.sessionId));
        if (page.length < 5) break;
        after = page.at(-1)!.sessionId;
      }
      expect(seen).toEqual(populated.sessionIds);
      expect(new Set((await store.scanHeads!(undefined, 100)).map((h) => h.owner))).toEqual(new Set(["", "acme"]));
      await expect(store.scanHeads!(undefined, 0)).rejects.toMatchObject({ status: "INVALID_ARGUMENT" });
    });
  }
});
