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
