import { randomBytes } from "node:crypto";
import { closeSync, linkSync, openSync, renameSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { syncDirectory } from "./directory-sync.js";
import { fsyncDescriptor, unlinkQuietly, writeDescriptor } from "./descriptor-io.js";

/** How {@link writeFileAtomically} writes. */
export interface AtomicWriteOptions {
  /** fsync the file before it is moved into place, and its directory after (power-loss safety). */
  fsync: boolean;
  /** Refuse to replace an existing file: resolves to false (nothing written) when `path` exists. */
  exclusive?: boolean;
}

/**
 * Writes `text` to `path` so that readers (in any process) see the old file or
 * the whole new one, never a torn one: a dot-named temporary file in the same
 * directory (mode 0600), optional fsync, then `rename` (or, with `exclusive`,
 * `link`, which fails atomically when `path` exists) and an fsync of the
 * directory. On failure the temporary file is removed and `path` is untouched.
 * Resolves to true when written (false only with `exclusive`, when `path` exists).
 * Opening, renaming and small writes are synchronous; fsyncs and large writes
 * run on the thread pool (see `LARGE_WRITE_BYTES`).
 */
export async function writeFileAtomically(path: string, text: string, options: AtomicWriteOptions): Promise<boolean> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const fd = openSync(tmp, "wx", 0o600);
  let renamed = false;
  try {
    try {
      await writeDescriptor(fd, text);
      if (options.fsync) await fsyncDescriptor(fd);
    } finally {
      closeSync(fd);
    }
    if (options.exclusive) {
      if (!linkExclusive(tmp, path)) return false;
    } else {
      renameSync(tmp, path);
      renamed = true;
    }
  } finally {
    if (!renamed) unlinkQuietly(tmp); // after link (or a failure); after a rename it is already gone
  }
  if (options.fsync) await syncDirectory(dir);
  return true;
}

/** Hard-links `tmp` at `path`; false when `path` exists. Falls back to check-then-rename where links are unsupported. */
function linkExclusive(tmp: string, path: string): boolean {
  try {
    linkSync(tmp, path);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return false;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP") throw err;
  }
  try {
    closeSync(openSync(path, "r"));
    return false;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  renameSync(tmp, path);
  return true;
}
