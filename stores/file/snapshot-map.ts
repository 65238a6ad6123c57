import { closeSync, existsSync, fstatSync, openSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { CoalescedSync } from "./coalesced-sync.js";
import { datasyncDescriptor } from "./descriptor-io.js";
import { syncDirectory } from "./directory-sync.js";
import { readAt } from "./session-log.js";
import { isSessionKey } from "./store-layout.js";

/** How often the open map is checked to still be the file at its path (not replaced from outside, e.g. a restore). */
const PATH_CHECK_MS = 1000;

/**
 * The snapshot-ID → session map of a store directory (`snapshots.map`), for
 * the calls that name only a snapshot ID (GetSnapshot, WatchSnapshot, Abort,
 * record updates). Append-only lines `<snapshotId> <session key>`, each
 * written with a newline before it, so a line torn by a crash never merges
 * with the next one; appends are O_APPEND writes of under 300 bytes, which
 * processes never interleave. The first line naming an ID wins: a commit
 * claims its ID by appending, then reading back which session holds it.
 * Lines naming a record that was never committed (a commit that failed after
 * its claim) are harmless: a lookup reads the session's log, which lacks it.
 *
 * Each process holds the whole map in memory (one entry per snapshot ever
 * committed in the directory, about 150 bytes each) and reads the lines other
 * processes appended on a miss.
 */
export class SnapshotMap {
  private fd: number | undefined;
  private ino = -1;
  private readEnd = 0;
  private partial = "";
  private readonly keys = new Map<string, string>();
  /** When the open descriptor was last checked to be the file at the path. */
  private pathCheckedAt = 0;
  /** This map created the file and its directory entry is not synced yet. */
  private createdUnsynced = false;
  private readonly syncer = new CoalescedSync(async () => {
    const fd = this.fd;
    if (fd === undefined) return;
    await datasyncDescriptor(fd);
    if (this.createdUnsynced) {
      await syncDirectory(dirname(this.path));
      this.createdUnsynced = false;
    }
  });

  /** `path`: the map file. */
  constructor(readonly path: string) {}

  /** The session key the map holds for `snapshotId`, reading what other processes appended when it is not known yet. */
  lookup(snapshotId: string): string | undefined {
    const known = this.keys.get(snapshotId);
    if (known !== undefined) return known;
    this.catchUp();
    return this.keys.get(snapshotId);
  }

  /**
   * Like {@link lookup}, but always reads what other processes appended
   * first, so a known and an unknown ID cost the same work (no timing oracle
   * on which IDs exist).
   */
  lookupFresh(snapshotId: string): string | undefined {
    this.catchUp();
    return this.keys.get(snapshotId);
  }

  /**
   * Appends `snapshotId → key` (unless this map already read a key for it)
   * and resolves to the session key the map holds for the ID afterwards:
   * `key`, or the session that claimed the ID first.
   */
  claim(snapshotId: string, key: string): string {
    // No catch-up before the append: the one after it reads every line up to
    // ours in file order, so a claim another process appended first still
    // wins (ours, then redundant, is ignored like any later claim).
    const known = this.keys.get(snapshotId);
    if (known !== undefined) return known;
    const fd = this.open(true)!;
    writeSync(fd, `\n${snapshotId} ${key}\n`);
    this.catchUp();
    return this.keys.get(snapshotId) ?? key;
  }

  /** Resolves once the lines appended so far are on disk, and the directory entry of a file this map created (fsyncs coalesced across callers). */
  sync(): Promise<void> {
    return this.syncer.request();
  }

  /** Reads the lines appended since the last read (all of them when the file was replaced). */
  catchUp(): void {
    const fd = this.open(false);
    if (fd === undefined) return;
    const { ino, size } = fstatSync(fd);
    if (ino !== this.ino || size < this.readEnd) {
      this.ino = ino;
      this.readEnd = 0;
      this.partial = "";
      this.keys.clear();
    }
    if (size <= this.readEnd) return;
    const text = this.partial + readAt(fd, this.readEnd, size - this.readEnd).toString("latin1");
    this.readEnd = size;
    const lines = text.split("\n");
    this.partial = lines.pop() ?? "";
    for (const line of lines) {
      const space = line.indexOf(" ");
      if (space <= 0) continue;
      const id = line.slice(0, space);
      const key = line.slice(space + 1);
      if (isSessionKey(key) && !this.keys.has(id)) this.keys.set(id, key);
    }
  }

  /** Closes the file. */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /**
   * The file, opened for reading and appending; created (0600) only with
   * `create`. A descriptor of a file no longer at the path (replaced or
   * removed from outside, e.g. a restore; checked at most once a second) is
   * closed and the path opened again.
   */
  private open(create: boolean): number | undefined {
    if (this.fd !== undefined) {
      const now = Date.now();
      if (now - this.pathCheckedAt < PATH_CHECK_MS) return this.fd;
      this.pathCheckedAt = now;
      const atPath = statSync(this.path, { throwIfNoEntry: false });
      if (atPath?.ino === fstatSync(this.fd).ino) return this.fd;
      this.close();
    }
    const existed = existsSync(this.path);
    if (!existed && !create) return undefined;
    this.fd = openSync(this.path, "a+", 0o600);
    if (!existed) this.createdUnsynced = true;
    return this.fd;
  }
}
