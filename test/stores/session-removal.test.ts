import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileSessionStore } from "../../stores/file-store.js";
import { encodeLogLine } from "../../stores/file/log-line.js";
import { SessionLogs } from "../../stores/file/session-logs.js";
import { removeSession } from "../../stores/file/session-removal.js";
import { sessionKey, StoreLayout } from "../../stores/file/store-layout.js";
import { KeyedMutex } from "../../stores/keyed-mutex.js";
import type { SessionHead } from "../../stores/snapshot-store.js";
import { spyOnFileSyncs, useTempDirs } from "./file-fixtures.js";
import { checkpointRecord, commitRecord, T0, type CounterState } from "./snapshot-factory.js";

// Removal of a session in the file store (stores/file/session-removal.ts): what deleteSession
// and sweepExpired run under the session's locks.

const tempDir = useTempDirs("agentd-session-removal-");

/** A store directory holding session `s1` with two committed records and `s2` with one, and its layout. */
async function twoSessions(): Promise<StoreLayout> {
  const store = new FileSessionStore<CounterState>(await tempDir(), { debrisSweep: { intervalMs: 0 } });
  try {
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await commitRecord(store, head, checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 }));
    await commitRecord(store, undefined, checkpointRecord("s2", "snap-3"));
    return new StoreLayout(store.directory);
  } finally {
    await store.close();
  }
}

const key = sessionKey("s1");

function logsOf(layout: StoreLayout, fsync = false): SessionLogs {
  return new SessionLogs(new KeyedMutex(), { root: layout.base, fsync });
}

describe("removeSession", () => {
  it("removes nothing and resolves to false when shouldRemove rejects the session's head", async () => {
    const layout = await twoSessions();
    const seen: (SessionHead | undefined)[] = [];
    const removed = await removeSession(logsOf(layout), layout, key, (head) => {
      seen.push(head);
      return false;
    });
    expect(removed).toBe(false);
    expect(seen.map((h) => h?.headSnapshotId)).toEqual(["snap-2"]);
    expect(await readdir(layout.sessionsDir)).toContain(`${key}.log`);
  });

  it("removes the session's log and chunk logs, and nothing of another session, when shouldRemove accepts", async () => {
    const layout = await twoSessions();
    await mkdir(layout.chunkDirOfKey(key), { recursive: true });
    await writeFile(join(layout.chunkDirOfKey(key), "snap-2.jsonl"), "");
    expect(await removeSession(logsOf(layout), layout, key, () => true)).toBe(true);
    expect(await readdir(layout.sessionsDir)).toEqual([`${sessionKey("s2")}.log`]);
    expect(await readdir(layout.chunksDir)).toEqual([]);
  });

  it("tells shouldRemove when the log is garbled, and removes it when it accepts", async () => {
    const layout = await twoSessions();
    const log = layout.logPathOfKey(key);
    const head = (version: number) =>
      encodeLogLine(
        { kind: "H", id: "-", version, status: "-", createdAt: 0 },
        JSON.stringify({ sessionId: "s1", version }),
      ).bytes;
    const first = head(1);
    first[first.length - 3] ^= 1; // a garbled byte in the first batch, before an intact one
    await writeFile(log, Buffer.concat([first, head(2)]));
    const calls: [SessionHead | undefined, boolean][] = [];
    expect(
      await removeSession(logsOf(layout), layout, key, (h, garbled) => {
        calls.push([h, garbled]);
        return true;
      }),
    ).toBe(true);
    expect(calls).toEqual([[undefined, true]]);
    expect(await readdir(layout.sessionsDir)).toEqual([`${sessionKey("s2")}.log`]);
  });

  it("resolves to false when the session has neither a log nor chunk logs", async () => {
    const layout = await twoSessions();
    expect(await removeSession(logsOf(layout), layout, sessionKey("nobody"), () => true)).toBe(false);
  });

  it("fails without asking shouldRemove when the log cannot be read for a reason other than its content", async () => {
    const layout = await twoSessions();
    const log = layout.logPathOfKey(key);
    await rm(log);
    await mkdir(log); // reading it fails with EISDIR
    let asked = false;
    await expect(removeSession(logsOf(layout), layout, key, () => (asked = true))).rejects.toMatchObject({
      code: "EISDIR",
    });
    expect(asked).toBe(false);
  });

  it("with fsync, syncs the sessions directory after removing the log", async () => {
    const layout = await twoSessions();
    const syncs = await spyOnFileSyncs(layout.base);
    await removeSession(logsOf(layout, true), layout, key, () => true);
    expect(syncs.mock.calls.map(([path]) => path)).toContain(layout.sessionsDir);
  });

  it("without fsync, syncs nothing", async () => {
    const layout = await twoSessions();
    const syncs = await spyOnFileSyncs(layout.base);
    await removeSession(logsOf(layout, false), layout, key, () => true);
    expect(syncs).not.toHaveBeenCalled();
  });
});
