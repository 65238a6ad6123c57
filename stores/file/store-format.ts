import { randomBytes } from "node:crypto";
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { AgentError } from "../../src/errors/agent-error.js";
import { STORE_MARKER_FILE } from "./store-layout.js";

/**
 * The file store's data format: 3 since session logs (`sessions/<key>.log`,
 * `snapshots.map`) replaced format 2's record files, head files and indexes.
 */
export const FILE_STORE_FORMAT = 3;

/** What showed a directory's format: the marker, or data of the old layout. */
interface FoundFormat {
  format: number | string;
  evidence: string;
}

function wrongFormat(dir: string, found: FoundFormat): AgentError {
  const what =
    found.format === 2
      ? `Stop every agentd using it and convert it with: agentd upgrade-store ${dir}`
      : `Point the store at a new, empty directory and keep this one for the agentd release that wrote it; ` +
        `its data is not converted automatically.`;
  return new AgentError(
    "FAILED_PRECONDITION",
    `store directory ${dir} was written in store format ${found.format} (${found.evidence}); this agentd reads format ${FILE_STORE_FORMAT}. ` +
      what,
    { details: { directory: dir, foundFormat: found.format, expectedFormat: FILE_STORE_FORMAT } },
  );
}

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/** The marker's format, or undefined when there is no marker. */
function readMarker(dir: string): FoundFormat | undefined {
  const path = join(dir, STORE_MARKER_FILE);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if (errnoCode(err) === "ENOENT" || errnoCode(err) === "ENOTDIR") return undefined;
    throw new AgentError("FAILED_PRECONDITION", `store marker ${path} cannot be read: ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    const format = (JSON.parse(text) as { format?: unknown }).format;
    if (typeof format === "number" && Number.isInteger(format)) return { format, evidence: `marker ${path}` };
  } catch {
    // reported below
  }
  return {
    format: "unknown",
    evidence: `unreadable marker ${path}; if the directory holds format-${FILE_STORE_FORMAT} data, restore or rewrite it as {"format":${FILE_STORE_FORMAT}}`,
  };
}

const OLD_FILE_PATTERN = /^\s*\{\s*"format"\s*:\s*(\d+)/;

/**
 * Looks for data of another layout in a directory without a marker: the
 * format-1 file store kept `<snapshotId>.json` files starting with
 * `{"format":1,…` and a `.sessions/` index directory. Other JSON files (no
 * top-level `format` first) are not agentd's and are ignored.
 */
function findOtherLayout(dir: string): FoundFormat | undefined {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return undefined;
    throw err;
  }
  for (const entry of entries) {
    if (entry.name === ".sessions" && entry.isDirectory())
      return { format: 1, evidence: `format-1 session index ${join(dir, ".sessions")}` };
    if (!entry.isFile() || !entry.name.endsWith(".json") || entry.name === STORE_MARKER_FILE) continue;
    const path = join(dir, entry.name);
    const match = OLD_FILE_PATTERN.exec(readStart(path));
    if (match && Number(match[1]) !== FILE_STORE_FORMAT)
      return { format: Number(match[1]), evidence: `snapshot file ${path}` };
  }
  return undefined;
}

function readStart(path: string): string {
  try {
    const fd = openSync(path, "r");
    try {
      const buffer = Buffer.alloc(64);
      return buffer.subarray(0, readSync(fd, buffer, 0, 64, 0)).toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return "";
  }
}

/**
 * Makes sure `dir` holds store format {@link FILE_STORE_FORMAT} data (or
 * nothing yet). With a marker: its format must be {@link FILE_STORE_FORMAT}. Without one: the
 * directory must hold no data of the old layout; the marker is then written
 * (atomically; concurrent writers write the same bytes), creating the
 * directory (mode 0700) when `create` is set. Returns true once the directory
 * is known to be of this format; false when it does not exist and `create` is unset
 * (nothing to read there yet). Throws FAILED_PRECONDITION naming the
 * directory, the format found and what to do. Synchronous: it runs once per
 * directory.
 */
export function ensureStoreFormat(dir: string, create: boolean): boolean {
  const marker = readMarker(dir);
  if (marker) {
    if (marker.format !== FILE_STORE_FORMAT) throw wrongFormat(dir, marker);
    return true;
  }
  if (!create && !existsSync(dir)) return false;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new AgentError("FAILED_PRECONDITION", `store directory ${dir} cannot be created: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const other = findOtherLayout(dir);
  if (other) throw wrongFormat(dir, other);
  const tmp = join(dir, `.${STORE_MARKER_FILE}.${randomBytes(6).toString("hex")}.tmp`);
  writeFileSync(tmp, `${JSON.stringify({ format: FILE_STORE_FORMAT })}\n`, { mode: 0o600, flag: "wx" });
  renameSync(tmp, join(dir, STORE_MARKER_FILE));
  return true;
}

/**
 * Creates the store directory `root` (mode 0700) if needed, checks that it is
 * writable and that it holds store format {@link FILE_STORE_FORMAT} (writing
 * the marker on a new directory). FAILED_PRECONDITION when it cannot be
 * created or written, or holds another format.
 */
export function openStoreDirectory(root: string): void {
  try {
    mkdirSync(root, { recursive: true, mode: 0o700 });
    accessSync(root, constants.W_OK);
  } catch (err) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `store directory ${root} cannot be created or is not writable: ${(err as Error).message}`,
      { cause: err },
    );
  }
  ensureStoreFormat(root, true);
}
