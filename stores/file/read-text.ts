import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";

/** The UTF-8 text of the file at `path`, or undefined when it does not exist (other errors throw). */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/**
 * As {@link readTextIfExists}, read synchronously: for small files only (heads,
 * locks), where one read costs less than a thread-pool round trip.
 */
export function readSmallTextIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}
