import fs from "node:fs";

/**
 * The file store opens, renames, links, unlinks and closes files, and writes
 * small texts, with synchronous calls: on a local disk each costs
 * microseconds, less than a round trip through the libuv thread pool. What
 * waits for the device (fsync) or copies a lot (large writes) goes to the
 * thread pool instead, so it never blocks the event loop. This is the length
 * (of the text, in UTF-16 code units: bytes for ASCII JSON) from which a
 * write is large.
 */
export const LARGE_WRITE_BYTES = 64 * 1024;

/** fsync(2) of an open file or directory descriptor on the thread pool. Rejects with the system error. */
export function fsyncDescriptor(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (err) => (err ? reject(err) : resolve())));
}

/** fdatasync(2) of an open file descriptor on the thread pool (the file's data and size, not its other metadata). Rejects with the system error. */
export function datasyncDescriptor(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
}

/**
 * Writes all of `text` (UTF-8) at the descriptor's position: synchronously
 * when it is shorter than {@link LARGE_WRITE_BYTES} characters, else on the
 * thread pool. Rejects with the system error.
 */
export async function writeDescriptor(fd: number, text: string): Promise<void> {
  if (text.length < LARGE_WRITE_BYTES) {
    fs.writeFileSync(fd, text, "utf8");
    return;
  }
  await new Promise<void>((resolve, reject) =>
    fs.writeFile(fd, text, "utf8", (err) => (err ? reject(err) : resolve())),
  );
}

/** The file at `path` opened with `flags` (synchronously), or undefined when it does not exist; other failures throw. */
export function openIfExists(path: string, flags: string): number | undefined {
  try {
    return fs.openSync(path, flags);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Writes all of `bytes` synchronously, at `position` or (without) at the descriptor's position. Throws the system error. */
export function writeAllSync(fd: number, bytes: Buffer, position?: number): void {
  let written = 0;
  while (written < bytes.length) {
    const at = position === undefined ? null : position + written;
    written += fs.writeSync(fd, bytes, written, bytes.length - written, at);
  }
}

/**
 * Writes all of `bytes` at `position`: synchronously when shorter than
 * {@link LARGE_WRITE_BYTES}, else on the thread pool. Rejects with the system error.
 */
export async function writeAllAt(fd: number, bytes: Buffer, position: number): Promise<void> {
  if (bytes.length < LARGE_WRITE_BYTES) return writeAllSync(fd, bytes, position);
  let written = 0;
  while (written < bytes.length) {
    written += await new Promise<number>((resolve, reject) =>
      fs.write(fd, bytes, written, bytes.length - written, position + written, (err, n) =>
        err ? reject(err) : resolve(n),
      ),
    );
  }
}

/** Removes `path` synchronously, ignoring every failure (already gone, directory gone): for clean-up that must not throw. */
export function unlinkQuietly(path: string): void {
  try {
    fs.unlinkSync(path);
  } catch {
    // nothing left to clean up, or nothing this clean-up can do
  }
}
