import { createHash } from "node:crypto";
import { appendFile, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { SnapshotSortKey } from "../snapshot-order.js";
import { compareNewestFirst } from "../snapshot-order.js";

/** Name of the directory (inside a store or prefix directory) that holds session index files. */
export const SESSION_INDEX_DIR = ".sessions";

/**
 * Per-session, append-only index of `createdAt<TAB>snapshotId` lines, one file
 * per session (named by a hash of the session ID), so latest-by-session and
 * listing read one small file instead of scanning every snapshot. A line is
 * appended before a new row's file is renamed into place, and again when a
 * rewrite changes `createdAt`; readers take the last line per ID and skip IDs
 * whose file no longer exists (pruned by the chain cap). Appends are single
 * O_APPEND writes of a short line, so concurrent processes never interleave.
 */
export class SessionIndex {
  constructor(private readonly baseDir: string) {}

  private pathOf(sessionId: string): string {
    const hash = createHash("sha256").update(sessionId, "utf8").digest("hex").slice(0, 40);
    return join(this.baseDir, SESSION_INDEX_DIR, `${hash}.idx`);
  }

  /** Records that `snapshotId` belongs to `sessionId` with this `createdAt`. */
  async append(sessionId: string, snapshotId: string, createdAt: number): Promise<void> {
    const path = this.pathOf(sessionId);
    const line = `${createdAt}\t${snapshotId}\n`;
    try {
      await appendFile(path, line, { mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      await mkdir(join(this.baseDir, SESSION_INDEX_DIR), { recursive: true, mode: 0o700 });
      await appendFile(path, line, { mode: 0o600 });
    }
  }

  /** The session's index entries, newest first (last line per ID wins; torn lines ignored). */
  async entries(sessionId: string): Promise<SnapshotSortKey[]> {
    let text: string;
    try {
      text = await readFile(this.pathOf(sessionId), "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw err;
    }
    const byId = new Map<string, number>();
    for (const line of text.split("\n")) {
      const tab = line.indexOf("\t");
      if (tab <= 0) continue;
      const createdAt = Number(line.slice(0, tab));
      const snapshotId = line.slice(tab + 1);
      if (!Number.isFinite(createdAt) || snapshotId.length === 0) continue;
      byId.set(snapshotId, createdAt);
    }
    return [...byId].map(([snapshotId, createdAt]) => ({ snapshotId, createdAt })).sort(compareNewestFirst);
  }
}
