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

/** Removes `path` synchronously, ignoring every failure (already gone, directory gone): for clean-up that must not throw. */
export function unlinkQuietly(path: string): void {
  try {
    fs.unlinkSync(path);
  } catch {
    // nothing left to clean up, or nothing this clean-up can do
  }
}
