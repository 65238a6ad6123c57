import fs, { existsSync, readlinkSync } from "node:fs";
import { appendFile, readFile, realpath, rename, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { SnapshotMap } from "../../stores/file/snapshot-map.js";
import { sessionKey } from "../../stores/file/store-layout.js";
import { useTempDirs } from "./file-fixtures.js";
import { outcomeOf } from "../harness/promise-outcome.js";

// The snapshot-ID → session map of a file store directory (stores/file/snapshot-map.ts): an
// append-only file of `<snapshotId> <session key>` lines where the first line naming an ID wins.
// Two SnapshotMap instances on one path stand for two processes sharing a store directory.

const tempDir = useTempDirs("agentd-snapshot-map-");

const KEY_A = sessionKey("session-a");
const KEY_B = sessionKey("session-b");
const KEY_C = sessionKey("session-c");

/** The path of a map file in a fresh temporary directory (the file does not exist yet). */
async function mapPath(): Promise<string> {
  return join(await realpath(await tempDir()), "snapshots.map");
}

/** A map on `path`, closed after the test. */
function openMap(path: string): SnapshotMap {
  const map = new SnapshotMap(path);
  onTestFinished(() => map.close());
  return map;
}

/** A line of the map file as a claim writes it. */
const line = (snapshotId: string, key: string) => `\n${snapshotId} ${key}\n`;

/** The file or directory an open descriptor of this process refers to (Linux: /proc/self/fd). */
const pathOf = (fd: number) => readlinkSync(`/proc/self/fd/${fd}`);

type SyncCallback = (err: NodeJS.ErrnoException | null) => void;

/** The syncs this process did during the rest of a test, see {@link watchSyncs}. */
interface Syncs {
  /** Paths of the files fdatasynced (`fs.fdatasync`), in call order. */
  datasynced: string[];
  /** Paths of the files and directories fsynced (`fs.fsync`), in call order. */
  fsynced: string[];
  /** Does the oldest fdatasync held back (with `hold`). */
  release: () => void;
  /** Makes the next fdatasync fail with `error` instead of being done. */
  failNext: (error: Error) => void;
}

/**
 * Records the path of every file this process fdatasyncs and of every file or directory it
 * fsyncs for the rest of the test, doing each; with `hold`, each fdatasync waits for `release`.
 */
function watchSyncs(hold = false): Syncs {
  const datasynced: string[] = [];
  const fsynced: string[] = [];
  const held: (() => void)[] = [];
  const failures: Error[] = [];
  const fdatasync = fs.fdatasync;
  const fsync = fs.fsync;
  const dataSpy = vi.spyOn(fs, "fdatasync").mockImplementation(((fd: number, callback: SyncCallback) => {
    datasynced.push(pathOf(fd));
    const failure = failures.shift();
    if (failure) callback(failure);
    else if (hold) held.push(() => fdatasync(fd, callback));
    else fdatasync(fd, callback);
  }) as typeof fs.fdatasync);
  const syncSpy = vi.spyOn(fs, "fsync").mockImplementation(((fd: number, callback: SyncCallback) => {
    fsynced.push(pathOf(fd));
    fsync(fd, callback);
  }) as typeof fs.fsync);
  onTestFinished(() => {
    dataSpy.mockRestore();
    syncSpy.mockRestore();
  });
  return { datasynced, fsynced, release: () => held.shift()!(), failNext: (error) => failures.push(error) };
}

/** Waits until `condition` holds (promise callbacks and thread-pool fsyncs running meanwhile). */
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met within 5 s");
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** Lets pending promise callbacks and thread-pool work run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setTimeout(resolve, 1));
}

describe("SnapshotMap.lookup", () => {
  it("finds no key for an unknown ID and does not create the file", async () => {
    const path = await mapPath();
    expect(openMap(path).lookup("snap-1")).toBeUndefined();
    expect(existsSync(path)).toBe(false);
  });

  it("finds the key of an ID another map claimed after the file was missing", async () => {
    const path = await mapPath();
    const [one, other] = [openMap(path), openMap(path)];
    expect(one.lookup("snap-1")).toBeUndefined();
    other.claim("snap-1", KEY_B);
    expect(one.lookup("snap-1")).toBe(KEY_B);
  });

  it("reads the lines another map appended since its own last read", async () => {
    const path = await mapPath();
    const [one, other] = [openMap(path), openMap(path)];
    other.claim("snap-1", KEY_A);
    expect(one.lookup("snap-1")).toBe(KEY_A);
    other.claim("snap-2", KEY_B);
    other.claim("snap-3", KEY_C);
    expect(one.lookup("snap-3")).toBe(KEY_C);
    expect(one.lookup("snap-2")).toBe(KEY_B);
  });

  it("holds the key of the first line naming an ID when later lines name it with other keys", async () => {
    const path = await mapPath();
    await writeFile(path, line("snap-1", KEY_A) + line("snap-1", KEY_B) + line("snap-1", KEY_C));
    expect(openMap(path).lookup("snap-1")).toBe(KEY_A);
  });
});

describe("SnapshotMap.claim", () => {
  it("creates the file readable and writable by its owner only (0600)", async () => {
    const path = await mapPath();
    openMap(path).claim("snap-1", KEY_A);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it("appends the claim as `<snapshotId> <key>` on a line of its own, after a newline", async () => {
    const path = await mapPath();
    const map = openMap(path);
    map.claim("snap-1", KEY_A);
    map.claim("snap-2", KEY_B);
    expect(await readFile(path, "utf8")).toBe(line("snap-1", KEY_A) + line("snap-2", KEY_B));
  });

  it("returns the claimed key for an ID no one holds, and looks it up from then on", async () => {
    const path = await mapPath();
    const map = openMap(path);
    expect(map.claim("snap-1", KEY_A)).toBe(KEY_A);
    expect(map.lookup("snap-1")).toBe(KEY_A);
  });

  it("returns the key of another map that claimed the ID first, which both maps keep looking up", async () => {
    const path = await mapPath();
    const [first, second] = [openMap(path), openMap(path)];
    expect(first.claim("snap-1", KEY_A)).toBe(KEY_A);
    expect(second.claim("snap-1", KEY_B)).toBe(KEY_A);
    expect(second.lookup("snap-1")).toBe(KEY_A);
    expect(first.lookup("snap-1")).toBe(KEY_A);
    expect(openMap(path).lookup("snap-1")).toBe(KEY_A);
  });

  it("returns the key of a line for the ID that landed before its own append (the first line wins a race)", async () => {
    const path = await mapPath();
    const map = openMap(path);
    // A racing writer's line for the ID whose end this map has not read when it claims: the map
    // sees no complete line for the ID, appends its own after it, and reads the racer's line first.
    await writeFile(path, `\nsnap-1 ${KEY_B}`);
    expect(map.lookup("snap-1")).toBeUndefined();
    expect(map.claim("snap-1", KEY_A)).toBe(KEY_B);
    expect(map.lookup("snap-1")).toBe(KEY_B);
    expect(openMap(path).lookup("snap-1")).toBe(KEY_B);
  });

  it("appends nothing for an ID it already holds", async () => {
    const path = await mapPath();
    const map = openMap(path);
    map.claim("snap-1", KEY_A);
    map.claim("snap-1", KEY_A);
    map.claim("snap-1", KEY_B);
    expect(await readFile(path, "utf8")).toBe(line("snap-1", KEY_A));
  });
});

describe("SnapshotMap: torn and malformed lines", () => {
  it("does not let a torn line hide the claim appended after it", async () => {
    const path = await mapPath();
    const [one, other] = [openMap(path), openMap(path)];
    one.claim("snap-1", KEY_A);
    await appendFile(path, "abc"); // a write cut short by a crash
    expect(one.lookup("snap-0")).toBeUndefined(); // `one` has read the torn line's start
    expect(other.claim("snap-2", KEY_B)).toBe(KEY_B);
    expect(other.lookup("snap-2")).toBe(KEY_B);
    expect(one.lookup("snap-2")).toBe(KEY_B);
    expect(openMap(path).lookup("snap-2")).toBe(KEY_B);
  });

  it("lets a later claim hold an ID whose earlier line was torn inside its key", async () => {
    const path = await mapPath();
    await appendFile(path, `\nsnap-1 ${KEY_A.slice(0, 20)}`);
    expect(openMap(path).claim("snap-1", KEY_B)).toBe(KEY_B);
    expect(openMap(path).lookup("snap-1")).toBe(KEY_B);
  });

  it("completes a line it read without its newline once the rest has been appended", async () => {
    const path = await mapPath();
    const map = openMap(path);
    await writeFile(path, `\nsnap-1 ${KEY_A.slice(0, 20)}`);
    expect(map.lookup("snap-1")).toBeUndefined();
    await appendFile(path, `${KEY_A.slice(20)}\n`);
    expect(map.lookup("snap-1")).toBe(KEY_A);
  });

  it("ignores lines that are not an ID and a key separated by a space", async () => {
    const path = await mapPath();
    await writeFile(path, ["", "no-space", ` ${KEY_A}`, "snap-1", `snap-2 ${KEY_B}`, ""].join("\n"));
    const map = openMap(path);
    expect(map.lookup("no-space")).toBeUndefined();
    expect(map.lookup("")).toBeUndefined();
    expect(map.lookup("snap-1")).toBeUndefined();
    expect(map.lookup("snap-2")).toBe(KEY_B);
  });

  it("ignores a line whose key is not 40 lowercase hex digits, so a later line for its ID holds", async () => {
    const path = await mapPath();
    const notKeys = [KEY_A.toUpperCase(), KEY_A.slice(1), `${KEY_A}0`, `${KEY_A} extra`, "z".repeat(40), ""];
    await writeFile(path, notKeys.map((key) => line("snap-1", key)).join("") + line("snap-1", KEY_B));
    expect(openMap(path).lookup("snap-1")).toBe(KEY_B);
  });

  it("finds no key for an ID named only by lines with bad keys", async () => {
    const path = await mapPath();
    await writeFile(path, line("snap-1", "not-a-session-key") + line("snap-1", KEY_A.toUpperCase()));
    expect(openMap(path).lookup("snap-1")).toBeUndefined();
  });
});

describe("SnapshotMap: a replaced or shortened file", () => {
  it("re-reads a file that shrank from its start", async () => {
    const path = await mapPath();
    const map = openMap(path);
    map.claim("snap-1", KEY_A);
    map.claim("snap-2", KEY_B);
    await writeFile(path, line("snap-3", KEY_C)); // truncated in place and rewritten, shorter
    expect(map.lookup("snap-3")).toBe(KEY_C);
    expect(map.lookup("snap-1")).toBeUndefined();
  });

  it("re-reads a file replaced by a rename while it holds the old one open (noticed within a second), and claims into the new one", async () => {
    const path = await mapPath();
    const map = openMap(path);
    map.claim("snap-1", KEY_A);
    await writeFile(`${path}.new`, line("snap-2", KEY_B));
    await rename(`${path}.new`, path);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // it looks at the path at most once a second
    expect(map.lookup("snap-2")).toBe(KEY_B);
    expect(map.lookup("snap-1")).toBeUndefined();
    expect(map.claim("snap-4", KEY_C)).toBe(KEY_C);
    expect(openMap(path).lookup("snap-4")).toBe(KEY_C);
  });

  it("re-reads a file replaced by a rename from its start when it opens it again after close", async () => {
    const path = await mapPath();
    const map = openMap(path);
    map.claim("snap-1", KEY_A);
    map.close();
    // The new file is longer than what the map has read: continuing at the old offset would skip snap-2.
    await writeFile(`${path}.new`, line("snap-2", KEY_B) + line("snap-3", KEY_C));
    await rename(`${path}.new`, path);
    expect(map.lookup("snap-2")).toBe(KEY_B);
    expect(map.lookup("snap-3")).toBe(KEY_C);
    expect(map.lookup("snap-1")).toBeUndefined();
  });
});

describe("SnapshotMap.sync", () => {
  it("fdatasyncs the map file and resolves with the claims on disk", async () => {
    const path = await mapPath();
    const syncs = watchSyncs();
    const map = openMap(path);
    map.claim("snap-1", KEY_A);
    await map.sync();
    expect(syncs.datasynced).toEqual([path]);
    expect(await readFile(path, "utf8")).toBe(line("snap-1", KEY_A));
  });

  it("fsyncs the directory of a file it created, on the first sync only", async () => {
    const path = await mapPath();
    const syncs = watchSyncs();
    const map = openMap(path);
    map.claim("snap-1", KEY_A);
    await map.sync();
    expect(syncs.fsynced).toEqual([join(path, "..")]);
    map.claim("snap-2", KEY_B);
    await map.sync();
    expect(syncs.fsynced).toEqual([join(path, "..")]);
    expect(syncs.datasynced).toEqual([path, path]);
  });

  it("does not fsync the directory of a file another map created", async () => {
    const path = await mapPath();
    openMap(path).claim("snap-1", KEY_A);
    const syncs = watchSyncs();
    const map = openMap(path);
    map.claim("snap-2", KEY_B);
    await map.sync();
    expect(syncs.datasynced).toEqual([path]);
    expect(syncs.fsynced).toEqual([]);
  });

  it("resolves without syncing anything when the map has not opened its file", async () => {
    const path = await mapPath();
    const syncs = watchSyncs();
    await openMap(path).sync();
    expect(syncs.datasynced).toEqual([]);
    expect(syncs.fsynced).toEqual([]);
    expect(existsSync(path)).toBe(false);
  });

  it("lets the syncs requested during a running fdatasync share one more fdatasync", async () => {
    const path = await mapPath();
    const syncs = watchSyncs(true);
    const map = openMap(path);
    map.claim("snap-1", KEY_A);
    const first = map.sync();
    await until(() => syncs.datasynced.length === 1);
    map.claim("snap-2", KEY_B);
    const waiting = [map.sync(), map.sync()];
    await settle();
    expect(syncs.datasynced).toHaveLength(1);
    syncs.release();
    await first;
    await until(() => syncs.datasynced.length === 2);
    syncs.release();
    await Promise.all(waiting);
    await settle();
    expect(syncs.datasynced).toEqual([path, path]);
  });

  it("does not resolve a sync requested during a running fdatasync until a later fdatasync has finished", async () => {
    const path = await mapPath();
    const syncs = watchSyncs(true);
    const map = openMap(path);
    map.claim("snap-1", KEY_A);
    const first = outcomeOf(map.sync());
    await until(() => syncs.datasynced.length === 1);
    map.claim("snap-2", KEY_B); // not covered by the fdatasync already running
    const later = outcomeOf(map.sync());
    syncs.release();
    await until(() => first.state !== "pending");
    await until(() => syncs.datasynced.length === 2);
    expect(first.state).toBe("resolved");
    expect(later.state).toBe("pending");
    syncs.release();
    await until(() => later.state !== "pending");
    expect(later.state).toBe("resolved");
  });

  it("rejects with the error of a failed fdatasync", async () => {
    const path = await mapPath();
    const syncs = watchSyncs();
    const map = openMap(path);
    map.claim("snap-1", KEY_A);
    const failure = Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" });
    syncs.failNext(failure);
    await expect(map.sync()).rejects.toBe(failure);
  });

  it("fdatasyncs again, and fsyncs the directory of the file it created, on the sync after a failed one", async () => {
    const path = await mapPath();
    const syncs = watchSyncs();
    const map = openMap(path);
    map.claim("snap-1", KEY_A);
    syncs.failNext(new Error("EIO"));
    await map.sync().catch(() => undefined);
    expect(syncs.fsynced).toEqual([]);
    await map.sync();
    expect(syncs.datasynced).toEqual([path, path]);
    expect(syncs.fsynced).toEqual([join(path, "..")]);
  });
});
