import { randomBytes } from "node:crypto";
import { open, rename, stat, unlink, utimes, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { AgentError } from "../../src/errors/agent-error.js";
import type { StoredChunk } from "../chunk-log.js";
import { syncDirectory } from "./directory-sync.js";

/**
 * One chunk log file (`chunks/<session key>/<snapshotId>.jsonl`): one line
 * per chunk, `{"sequence":N,"chunk":…}\n`, sequence first (so indexing a
 * line reads only its first bytes), appended by the log's single writer.
 * Only complete lines count: the bytes after the last newline are a torn
 * line (a crash mid-append) or an append in progress, never returned.
 *
 * Its keep-until time is the mtime of the empty file next to it,
 * `<snapshotId>.keep`: appends never touch that file, so a sweep reading it
 * never mistakes an append's mtime for an expired keep-until.
 */

/** The line of one chunk, given the chunk's JSON. */
export function chunkLine(sequence: number, chunkJson: string): string {
  return `{"sequence":${sequence},"chunk":${chunkJson}}\n`;
}

const NEWLINE = 0x0a;

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/** The mtime of `path` in whole epoch ms (exact, unlike `mtimeMs`), or undefined when it does not exist. */
async function mtimeOf(path: string): Promise<number | undefined> {
  try {
    const info = await stat(path, { bigint: true });
    return Math.round(Number(info.mtimeNs / 1000n) / 1000);
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return undefined;
    throw err;
  }
}

/**
 * A log's keep-until time: the mtime of its keep file, else (a log whose keep
 * file is gone) the log's own mtime; undefined when neither exists.
 */
export async function readKeepUntil(keepPath: string, logPath: string): Promise<number | undefined> {
  return (await mtimeOf(keepPath)) ?? (await mtimeOf(logPath));
}

/**
 * Sets a log's keep-until time (the keep file's mtime; with `extendOnly` a
 * later time already there stays). A missing keep file is created already
 * carrying the time (an empty temporary file, utimes, rename), so no sweep
 * ever sees it with its creation time. ENOENT when the directory is gone.
 */
export async function writeKeepUntil(keepPath: string, keepUntil: number, extendOnly: boolean): Promise<void> {
  const at = new Date(keepUntil);
  if (extendOnly) {
    const current = await mtimeOf(keepPath);
    if (current !== undefined && current >= keepUntil) return;
  }
  try {
    await utimes(keepPath, at, at);
    return;
  } catch (err) {
    if (errnoCode(err) !== "ENOENT") throw err;
  }
  const tmp = join(dirname(keepPath), `.${basename(keepPath)}.${randomBytes(6).toString("hex")}.tmp`);
  await (await open(tmp, "wx", 0o600)).close();
  try {
    await utimes(tmp, at, at);
    await rename(tmp, keepPath);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
}

/**
 * Appends `text` (complete lines) to the log at `path`, creating it (mode
 * 0600) when missing. A torn last line (a crash mid-append) is cut off
 * first, so the new lines never join it. With `fsync`, resolves once the
 * lines (and, for a new file, its directory entry) are on disk. ENOENT when
 * the directory is gone.
 */
export async function appendChunkLines(path: string, text: string, fsync: boolean): Promise<void> {
  const handle = await open(path, "a+", 0o600);
  let created: boolean;
  try {
    const { size } = await handle.stat();
    created = size === 0;
    if (size > 0) await cutTornLine(handle, size);
    await handle.writeFile(text, "utf8");
    if (fsync) await handle.datasync();
  } finally {
    await handle.close();
  }
  if (created && fsync) await syncDirectory(dirname(path));
}

/** Truncates the file after its last newline when it does not end with one. */
async function cutTornLine(handle: FileHandle, size: number): Promise<void> {
  const block = Buffer.alloc(64 * 1024);
  await handle.read(block, 0, 1, size - 1);
  if (block[0] === NEWLINE) return;
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - block.length);
    const { bytesRead } = await handle.read(block, 0, end - start, start);
    const at = block.subarray(0, bytesRead).lastIndexOf(NEWLINE);
    if (at >= 0) {
      await handle.truncate(start + at + 1);
      return;
    }
    end = start;
  }
  await handle.truncate(0);
}

/** Where the complete lines of one log file are (see {@link ChunkFileReader}). */
interface LineIndex {
  dev: number;
  ino: number;
  /** The file's birth time: a file created at a swept log's path may reuse its inode number, never this. */
  born: number;
  /** The sequence each complete line starts with, in file order. */
  sequences: number[];
  /** The offset just after each complete line's newline. */
  ends: number[];
}

/** The end of the indexed part (the last complete line's end). */
const indexedEnd = (index: LineIndex): number => index.ends[index.ends.length - 1] ?? 0;

const SEQUENCE_PREFIX = /^\{"sequence":(\d{1,16}),/;
/** Bytes of a line's start kept while indexing: enough for `{"sequence":<16 digits>,`. */
const PREFIX_BYTES = 32;

function corrupt(path: string, why: string, cause?: unknown): AgentError {
  return new AgentError(
    "DATA_LOSS",
    `chunk log ${path} is not a valid agentd chunk log (${why}); delete the file to drop the log (clients can no longer re-attach to its stream)`,
    cause !== undefined ? { cause } : undefined,
  );
}

/**
 * Reads chunk log files through an index of their complete lines (sequence
 * and end offset of each), kept per file for the last `maxFiles` files read
 * and extended with only the bytes appended since, so a reader following a
 * live log reads each line's bytes about twice in all (once to index, once
 * to parse), not the whole file per read. An index that no longer matches
 * its file (another file at the path: other device, inode or birth time; a
 * file shorter than indexed; lines that do not match their index) is rebuilt.
 */
export class ChunkFileReader {
  private readonly indexes = new Map<string, LineIndex>();

  constructor(private readonly maxFiles = 256) {}

  /**
   * The chunks of the log at `path` with a sequence greater than `after`, in
   * file order, at most `limit`; [] when the file does not exist. DATA_LOSS
   * when a complete line is not a chunk line.
   */
  async read(path: string, after: number, limit: number): Promise<StoredChunk[]> {
    for (let attempt = 0; ; attempt++) {
      let handle: FileHandle;
      try {
        handle = await open(path, "r");
      } catch (err) {
        if (errnoCode(err) !== "ENOENT") throw err;
        this.indexes.delete(path);
        return [];
      }
      try {
        const index = await this.indexOf(path, handle);
        const first = firstAfter(index.sequences, after);
        const last = Math.min(index.sequences.length, first + limit);
        if (first >= last) return [];
        const from = first === 0 ? 0 : index.ends[first - 1]!;
        const bytes = Buffer.alloc(index.ends[last - 1]! - from);
        if (await readFully(handle, bytes, from)) {
          const chunks = parseLines(path, bytes);
          if (chunks.length === last - first && chunks.every((c, i) => c.sequence === index.sequences[first + i]))
            return chunks;
        }
        this.indexes.delete(path); // the file changed under the index: rebuild it once
        if (attempt > 0) throw corrupt(path, "its lines changed while being read");
      } finally {
        await handle.close();
      }
    }
  }

  /** Forgets the index of `path` (the file was removed). */
  forget(path: string): void {
    this.indexes.delete(path);
  }

  private async indexOf(path: string, handle: FileHandle): Promise<LineIndex> {
    const info = await handle.stat();
    let index = this.indexes.get(path);
    const same = index && index.dev === info.dev && index.ino === info.ino && index.born === info.birthtimeMs;
    if (!index || !same || info.size < indexedEnd(index))
      index = { dev: info.dev, ino: info.ino, born: info.birthtimeMs, sequences: [], ends: [] };
    this.indexes.delete(path); // re-inserted last: least recently used first
    if (info.size > indexedEnd(index)) await extendIndex(path, handle, index, info.size);
    this.indexes.set(path, index);
    for (const stale of this.indexes.keys()) {
      if (this.indexes.size <= this.maxFiles) break;
      this.indexes.delete(stale);
    }
    return index;
  }
}

/** Indexes the complete lines between the index's end and `size`. */
async function extendIndex(path: string, handle: FileHandle, index: LineIndex, size: number): Promise<void> {
  const block = Buffer.alloc(256 * 1024);
  const prefix = Buffer.alloc(PREFIX_BYTES);
  let prefixLength = 0;
  let position = indexedEnd(index);
  while (position < size) {
    const { bytesRead } = await handle.read(block, 0, Math.min(block.length, size - position), position);
    if (bytesRead === 0) break;
    for (let i = 0; i < bytesRead;) {
      const found = block.indexOf(NEWLINE, i);
      const newline = found >= 0 && found < bytesRead ? found : -1;
      const segmentEnd = newline >= 0 ? newline : bytesRead;
      const take = Math.min(segmentEnd - i, PREFIX_BYTES - prefixLength);
      if (take > 0) prefixLength += block.copy(prefix, prefixLength, i, i + take);
      if (newline < 0) break;
      const match = SEQUENCE_PREFIX.exec(prefix.subarray(0, prefixLength).toString("latin1"));
      if (!match) throw corrupt(path, `line ${index.ends.length + 1} does not start with {"sequence":N,`);
      index.sequences.push(Number(match[1]));
      index.ends.push(position + newline + 1);
      prefixLength = 0;
      i = newline + 1;
    }
    position += bytesRead;
  }
}

/** Index of the first entry greater than `after` (entries are increasing). */
function firstAfter(sequences: readonly number[], after: number): number {
  let low = 0;
  let high = sequences.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (sequences[mid]! > after) high = mid;
    else low = mid + 1;
  }
  return low;
}

/** Fills `into` from `position`; false when the file ends first (it was cut meanwhile). */
async function readFully(handle: FileHandle, into: Buffer, position: number): Promise<boolean> {
  for (let done = 0; done < into.length;) {
    const { bytesRead } = await handle.read(into, done, into.length - done, position + done);
    if (bytesRead === 0) return false;
    done += bytesRead;
  }
  return true;
}

function parseLines(path: string, bytes: Buffer): StoredChunk[] {
  const lines = bytes.toString("utf8").split("\n");
  lines.pop(); // the text ends with a newline
  return lines.map((line) => {
    let parsed: { sequence?: unknown; chunk?: unknown };
    try {
      parsed = JSON.parse(line) as typeof parsed;
    } catch (err) {
      throw corrupt(path, "a line is not JSON", err);
    }
    if (typeof parsed?.sequence !== "number" || parsed.chunk === undefined)
      throw corrupt(path, "a line has no sequence or chunk");
    return { sequence: parsed.sequence, chunk: parsed.chunk as StoredChunk["chunk"] };
  });
}
