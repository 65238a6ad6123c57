import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, stat, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FileSessionStore, type FileSessionStoreOptions } from "../../stores/file-store.js";
import { BOOT_ID, CommitJournal } from "../../stores/file/commit-journal.js";
import { decodeJournalEntries, encodeJournalEntry, type JournalEntry } from "../../stores/file/journal-entry.js";
import { sessionKey, StoreLayout } from "../../stores/file/store-layout.js";
import { deadPid, recordFileSyncs, useTempDirs } from "./file-fixtures.js";
import { checkpointRecord, commitRecord, eventually, T0, type CounterState } from "./snapshot-factory.js";

// The file store's commit journal (stores/file/commit-journal.ts, journal-entry.ts,
// journal-replay.ts): group-committed durability, retiring segments, and replaying what a dead
// process recorded but did not write.

const tempDir = useTempDirs("agentd-file-journal-");
const stores: FileSessionStore<CounterState>[] = [];

function open(dir: string, options: FileSessionStoreOptions = {}): FileSessionStore<CounterState> {
  const store = new FileSessionStore<CounterState>(dir, { debrisSweep: { intervalMs: 0 }, ...options });
  stores.push(store);
  return store;
}

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

describe("journal entries", () => {
  it("decode to what was encoded: batches (whose bytes hold newlines), removals and aborts, in order", () => {
    const entries: JournalEntry[] = [
      { kind: "batch", seq: 1, log: "sessions/a.log", offset: 7, bytes: Buffer.from("R line\nH line\n") },
      {
        kind: "batch",
        seq: 2,
        log: "t/sessions/b.log",
        offset: 0,
        map: { path: "t/snapshots.map", key: "k", ids: ["x"] },
        bytes: Buffer.from("é\n"),
      },
      { kind: "removal", seq: 3, log: "sessions/a.log" },
      { kind: "abort", seq: 4, aborted: 2 },
    ];
    const decoded = decodeJournalEntries(Buffer.concat(entries.map(encodeJournalEntry)));
    expect(decoded).toEqual(entries);
  });

  it("end at a torn or garbled line: what follows it is not read", () => {
    const first = encodeJournalEntry({ kind: "removal", seq: 1, log: "sessions/a.log" });
    const second = encodeJournalEntry({
      kind: "batch",
      seq: 2,
      log: "sessions/b.log",
      offset: 0,
      bytes: Buffer.from("x\n"),
    });
    const third = encodeJournalEntry({ kind: "removal", seq: 3, log: "sessions/c.log" });
    expect(decodeJournalEntries(Buffer.concat([first, second.subarray(0, second.length - 3)]))).toHaveLength(1);
    const garbled = Buffer.from(second);
    garbled[garbled.length - 3] ^= 1;
    expect(decodeJournalEntries(Buffer.concat([first, garbled, third]))).toHaveLength(1);
  });
});

describe("CommitJournal", () => {
  it("makes concurrent batches durable with fsyncs they share", async () => {
    const dir = await tempDir();
    const journal = new CommitJournal(join(dir, "journal"));
    const syncs = await recordFileSyncs(dir);
    const tickets = Array.from({ length: 20 }, (_, i) =>
      journal.recordBatch({ log: `sessions/${i}.log`, offset: 0, bytes: Buffer.from("H\n") }, false),
    );
    await Promise.all(tickets.map((t) => t.durable));
    const segmentSyncs = syncs.datasynced.filter((p) => p.endsWith(".jnl"));
    expect(segmentSyncs.length).toBeGreaterThanOrEqual(1);
    expect(segmentSyncs.length).toBeLessThanOrEqual(2); // one running, one queued behind it for the rest
    for (const t of tickets) t.done();
    await journal.close();
  });

  it("retires a closed segment once its batches are written: fsyncs the logs it touched, then removes it", async () => {
    const dir = await tempDir();
    const log = join(dir, "a.log");
    await writeFile(log, "");
    const journal = new CommitJournal(join(dir, "journal"), { maxSegmentAgeMs: 50 });
    const ticket = journal.recordBatch({ log, offset: 0, bytes: Buffer.from("H\n") }, false);
    await ticket.durable;
    await new Promise((resolve) => setTimeout(resolve, 150)); // closed by age, but its batch is not written yet
    expect(await readdir(join(dir, "journal"))).toHaveLength(1);
    const syncs = await recordFileSyncs(dir);
    ticket.done();
    await eventually(async () => (await readdir(join(dir, "journal"))).length === 0);
    expect(syncs.datasynced).toContain(log);
    expect(journal.segmentCount).toBe(0);
    await journal.close();
  });

  it("retires the segment holding a deleted session's batches right after the delete", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await commitRecord(store, undefined, checkpointRecord("doomed", "snap-1"));
    const segments = await readdir(join(dir, "journal"));
    expect(segments).toHaveLength(1);
    expect(await readFile(join(dir, "journal", segments[0]!), "utf8")).toContain("doomed");
    expect(await store.deleteSession("doomed")).toBe(true);
    await eventually(async () => !(await readdir(join(dir, "journal"))).includes(segments[0]!), 2_000);
  });

  it("records an aborted batch, which a replay skips", async () => {
    const dir = await tempDir();
    const journal = new CommitJournal(join(dir, "journal"));
    const ticket = journal.recordBatch({ log: "sessions/a.log", offset: 0, bytes: Buffer.from("H\n") }, false);
    await ticket.durable;
    await ticket.abort();
    const [segment] = await readdir(join(dir, "journal"));
    const entries = decodeJournalEntries(await readFile(join(dir, "journal", segment!)));
    expect(entries.map((e) => e.kind)).toEqual(["batch", "abort"]);
    expect(entries[1]).toMatchObject({ aborted: entries[0]!.seq });
    await journal.close();
  });
});

/**
 * A store directory where a process (pid `pid`, gone) committed session s1's second snapshot to
 * its journal and died before writing it to the log: the log and the snapshot map hold only the
 * first commit, the dead process's segment holds the second batch, and (with `lockHeld`) its
 * lock file still names it.
 */
async function crashedAfterJournaling(
  options: { dir?: string; lockHeld?: boolean; abort?: boolean; removal?: boolean } = {},
) {
  const dir = options.dir ?? (await tempDir());
  const writer = open(dir);
  const first = await commitRecord(writer, undefined, checkpointRecord("s1", "snap-1"));
  await writer.close();
  const layout = new StoreLayout(dir);
  const key = sessionKey("s1");
  const log = layout.logPathOfKey(key);
  const offset = (await stat(log)).size;
  const again = open(dir);
  const second = await commitRecord(
    again,
    first,
    checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 }),
  );
  await again.close();
  const bytes = (await readFile(log)).subarray(offset);
  await truncate(log, offset);
  const map = await readFile(layout.snapshotMapPath, "utf8");
  await writeFile(layout.snapshotMapPath, map.replace(`\nsnap-2 ${key}\n`, ""));
  const pid = await deadPid();
  const entries: JournalEntry[] = [
    {
      kind: "batch",
      seq: 1,
      log: `sessions/${key}.log`,
      offset,
      map: { path: "snapshots.map", key, ids: ["snap-2"] },
      bytes,
    },
  ];
  if (options.abort) entries.push({ kind: "abort", seq: 2, aborted: 1 });
  if (options.removal) entries.push({ kind: "removal", seq: 2, log: `sessions/${key}.log` });
  await mkdir(join(dir, "journal"), { recursive: true });
  const segment = join(
    dir,
    "journal",
    `${BOOT_ID || "noboot"}-${pid}-${Date.now()}-${randomBytes(4).toString("hex")}.jnl`,
  );
  await writeFile(segment, Buffer.concat(entries.map(encodeJournalEntry)));
  const lockPath = layout.lockPathOfKey(key);
  if (options.lockHeld ?? true) await writeFile(lockPath, JSON.stringify({ pid, token: "died-holding-it" }));
  return { dir, log, segment, lockPath, first, second };
}

describe("file store journal replay", () => {
  it("at open, writes the batch a dead process journaled (and acknowledged) but did not write to its log", async () => {
    const { dir, segment, lockPath, second } = await crashedAfterJournaling();
    const store = open(dir);
    expect(await store.getHead("s1")).toEqual(second);
    expect((await store.getRecord("snap-2"))?.parentId).toBe("snap-1");
    expect(existsSync(segment)).toBe(false);
    expect(existsSync(lockPath)).toBe(false);
    expect(await open(dir).getRecord("snap-2")).toBeDefined(); // the snapshot map line is back too
  });

  it("at open, leaves the log alone when the dead process no longer held the session's lock (it made the log durable before letting the lock go)", async () => {
    const { dir, segment, first } = await crashedAfterJournaling({ lockHeld: false });
    const store = open(dir);
    expect(await store.getHead("s1")).toEqual(first);
    expect(existsSync(segment)).toBe(false);
  });

  it("skips a batch the journal marks aborted (its commit was reported failed)", async () => {
    const { dir, first } = await crashedAfterJournaling({ abort: true });
    expect(await open(dir).getHead("s1")).toEqual(first);
  });

  it("removes a log again when the dead process removed it after the batch (a deleted session stays deleted)", async () => {
    const { dir, log } = await crashedAfterJournaling({ removal: true });
    const store = open(dir);
    expect(await store.getHead("s1")).toBeUndefined();
    expect(existsSync(log)).toBe(false);
  });

  it("replays what a dead holder journaled before a commit of a store already open takes its lock", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.getHead("s1"); // open: nothing to replay yet
    const { first, second } = await crashedAfterJournaling({ dir });
    const late = checkpointRecord("s1", "snap-3", { parentId: "snap-1", createdAt: T0 + 2 });
    expect(
      await store.commit({
        expectedVersion: first.version,
        head: { ...first, headSnapshotId: "snap-3" },
        record: late,
      }),
    ).toBeUndefined();
    expect(await store.getHead("s1")).toEqual(second);
  });
});
