import { mkdir, readdir, stat, truncate, unlink, writeFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { FileSessionStore } from "../../stores/file-store.js";
import { acquireFileLock } from "../../stores/file/file-lock.js";
import { appendIndexEntry } from "../../stores/file/session-index.js";
import { removeSessionFiles, type RemovalContext } from "../../stores/file/session-removal.js";
import { sessionKey, StoreLayout } from "../../stores/file/store-layout.js";
import { KeyedMutex } from "../../stores/keyed-mutex.js";
import type { SessionHead } from "../../stores/snapshot-store.js";
import { spyOnFileSyncs, useTempDirs } from "./file-fixtures.js";
import { checkpointRecord, commitRecord, T0, type CounterState } from "./snapshot-factory.js";

// Removal of a session's files in the file store (stores/file/session-removal.ts): what
// deleteSession and sweepExpired run under the session's lock.

const tempDir = useTempDirs("agentd-session-removal-");

/** The removal context FileSessionStore gives: its in-process mutex plus the cross-process lock file. */
function removalContext(fsync = false): RemovalContext {
  const mutex = new KeyedMutex();
  return {
    locked: (key, lockPath, fn) =>
      mutex.run(key, async () => {
        const release = await acquireFileLock(lockPath);
        try {
          return await fn();
        } finally {
          await release();
        }
      }),
    fsync,
  };
}

/** A store directory holding session `s1` with two committed records (and `s2` with one when asked), and its layout. */
async function sessionOfTwoRecords(options: { withOtherSession?: boolean } = {}): Promise<StoreLayout> {
  const store = new FileSessionStore<CounterState>(await tempDir(), { debrisSweep: { intervalMs: 0 } });
  try {
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await commitRecord(store, head, checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 }));
    if (options.withOtherSession) await commitRecord(store, undefined, checkpointRecord("s2", "snap-3"));
    return new StoreLayout(store.directory);
  } finally {
    await store.close();
  }
}

describe("removeSessionFiles", () => {
  it("removes nothing and resolves to false when shouldRemove rejects the session's head", async () => {
    const layout = await sessionOfTwoRecords();
    const before = { records: await readdir(layout.recordsDir), sessions: await readdir(layout.sessionsDir) };
    const seen: [SessionHead | undefined, boolean][] = [];
    const removed = await removeSessionFiles(removalContext(), layout, sessionKey("s1"), (head, corrupt) => {
      seen.push([head, corrupt]);
      return false;
    });
    expect(removed).toBe(false);
    expect(seen).toEqual([[expect.objectContaining({ sessionId: "s1", version: 2 }), false]]);
    expect({ records: await readdir(layout.recordsDir), sessions: await readdir(layout.sessionsDir) }).toEqual(before);
  });

  it("tells shouldRemove when the head file is corrupt, and removes the session's files when it accepts", async () => {
    const layout = await sessionOfTwoRecords();
    await writeFile(layout.headPath("s1"), "{");
    const seen: [SessionHead | undefined, boolean][] = [];
    const removed = await removeSessionFiles(removalContext(), layout, sessionKey("s1"), (head, corrupt) => {
      seen.push([head, corrupt]);
      return corrupt;
    });
    expect(removed).toBe(true);
    expect(seen).toEqual([[undefined, true]]);
    expect(await readdir(layout.recordsDir)).toEqual([]);
    expect(await readdir(layout.sessionsDir)).toEqual([]);
  });

  it("removes a corrupt record file the session's index lists along with the session", async () => {
    const layout = await sessionOfTwoRecords();
    await truncate(layout.recordPath("snap-1"), Math.floor((await stat(layout.recordPath("snap-1"))).size / 2));
    expect(await removeSessionFiles(removalContext(), layout, sessionKey("s1"), () => true)).toBe(true);
    expect(await readdir(layout.recordsDir)).toEqual([]);
    expect(await readdir(layout.sessionsDir)).toEqual([]);
  });

  it("leaves a record the session's index lists but another session owns", async () => {
    const layout = await sessionOfTwoRecords({ withOtherSession: true });
    await appendIndexEntry(layout.indexPathOfKey(sessionKey("s1")), { createdAt: T0 + 2, snapshotId: "snap-3" }, false);
    expect(await removeSessionFiles(removalContext(), layout, sessionKey("s1"), () => true)).toBe(true);
    expect(await readdir(layout.recordsDir)).toEqual(["snap-3.json"]);
  });

  it("fails without asking shouldRemove when the head file cannot be read for a reason other than corruption", async () => {
    const layout = await sessionOfTwoRecords();
    await unlink(layout.headPath("s1"));
    await mkdir(layout.headPath("s1"));
    let asked = false;
    const removal = removeSessionFiles(removalContext(), layout, sessionKey("s1"), () => (asked = true));
    await expect(removal).rejects.toMatchObject({ code: "EISDIR" });
    expect(asked).toBe(false);
    expect((await readdir(layout.recordsDir)).sort()).toEqual(["snap-1.json", "snap-2.json"]);
  });

  it("with fsync, syncs the sessions directory and the records directory after removing from them", async () => {
    const layout = await sessionOfTwoRecords();
    const syncs = await spyOnFileSyncs(layout.base);
    expect(await removeSessionFiles(removalContext(true), layout, sessionKey("s1"), () => true)).toBe(true);
    expect(syncs).toHaveBeenCalledTimes(2);
  });

  it("without fsync, syncs nothing", async () => {
    const layout = await sessionOfTwoRecords();
    const syncs = await spyOnFileSyncs(layout.base);
    expect(await removeSessionFiles(removalContext(false), layout, sessionKey("s1"), () => true)).toBe(true);
    expect(syncs).not.toHaveBeenCalled();
  });

  it("with fsync, syncs only the records directory when the head was already gone (finishing an interrupted delete)", async () => {
    const layout = await sessionOfTwoRecords();
    await unlink(layout.headPath("s1"));
    await unlink(layout.recordPath("snap-2"));
    const syncs = await spyOnFileSyncs(layout.base);
    expect(await removeSessionFiles(removalContext(true), layout, sessionKey("s1"), () => true)).toBe(true);
    expect(syncs).toHaveBeenCalledTimes(1);
    expect(await readdir(layout.recordsDir)).toEqual([]);
    expect(await readdir(layout.sessionsDir)).toEqual([]);
  });

  it("with fsync, syncs no directory when only the index was left", async () => {
    const layout = await sessionOfTwoRecords();
    await unlink(layout.headPath("s1"));
    await unlink(layout.recordPath("snap-1"));
    await unlink(layout.recordPath("snap-2"));
    const syncs = await spyOnFileSyncs(layout.base);
    expect(await removeSessionFiles(removalContext(true), layout, sessionKey("s1"), () => true)).toBe(true);
    expect(syncs).not.toHaveBeenCalled();
    expect(await readdir(layout.sessionsDir)).toEqual([]);
  });
});
