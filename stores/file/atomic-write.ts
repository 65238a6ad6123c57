import { randomBytes } from "node:crypto";
import { link, open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

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
 */
export async function writeFileAtomically(path: string, text: string, options: AtomicWriteOptions): Promise<boolean> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const handle = await open(tmp, "wx", 0o600);
  let renamed = false;
  try {
    try {
      await handle.writeFile(text, "utf8");
      if (options.fsync) await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.exclusive) {
      if (!(await linkExclusive(tmp, path))) return false;
    } else {
      await rename(tmp, path);
      renamed = true;
    }
  } finally {
    if (!renamed) await unlink(tmp).catch(() => undefined); // after link (or a failure); after a rename it is already gone
  }
  if (options.fsync) await syncDirectory(dir);
  return true;
}

/** Hard-links `tmp` at `path`; false when `path` exists. Falls back to check-then-rename where links are unsupported. */
async function linkExclusive(tmp: string, path: string): Promise<boolean> {
  try {
    await link(tmp, path);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return false;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP") throw err;
  }
  try {
    await (await open(path, "r")).close();
    return false;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  await rename(tmp, path);
  return true;
}

/** fsyncs a directory so a rename in it survives power loss; best effort (some platforms refuse). */
export async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // not supported here (e.g. Windows); the file itself was synced
  }
}
