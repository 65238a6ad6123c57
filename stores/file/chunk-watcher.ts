import { closeSync, fstatSync, openSync, readSync, statSync, watch, type FSWatcher, type Stats } from "node:fs";
import { open, stat } from "node:fs/promises";
import { join } from "node:path";

/**
 * What identifies a log's content for the watcher: its inode, birth time (a
 * new log at a swept one's path may reuse the inode number) and size while
 * it ends with a complete line; "absent" when it is missing or empty. A log
 * whose last line is still being written (or torn) has no signature yet, so
 * one append counts once, when its last line is complete.
 */
type Signature = string;

const NEWLINE = 0x0a;

function signatureSync(path: string): Signature | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const { ino, birthtimeMs, size } = fstatSync(fd);
    if (size === 0) return "absent";
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] === NEWLINE ? `${ino}:${birthtimeMs}:${size}` : undefined;
  } catch {
    return "absent";
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

async function signatureOf(path: string): Promise<Signature | undefined> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT" ? "absent" : undefined; // undefined: unknown right now
  }
  try {
    const { ino, birthtimeMs, size } = await handle.stat();
    if (size === 0) return "absent";
    const last = Buffer.alloc(1);
    await handle.read(last, 0, 1, size - 1);
    return last[0] === NEWLINE ? `${ino}:${birthtimeMs}:${size}` : undefined;
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

/**
 * Notices every change of one chunk log file (`<dir>/<name>`), whichever
 * process writes it, and calls `onChange` once per observed change: an
 * `fs.watch` on the log's directory (instant on Linux and macOS; it reports
 * appends to files in the directory) plus a poll every `pollIntervalMs` (the
 * fallback where fs.watch is unavailable or lost, e.g. when the directory
 * was removed with its session and created again: the poll then re-attaches
 * the OS watcher). Both only `stat` the log and compare its inode and size
 * with the last ones seen, taken synchronously when the watcher starts, so
 * appends made before that never count and each change counts once however
 * many events report it (a log counts only while it ends with a complete
 * line, see Signature). In-process appends call {@link changed} for an
 * immediate check.
 */
export class ChunkFileWatcher {
  private readonly path: string;
  private last: Signature | undefined;
  private fsWatcher: FSWatcher | undefined;
  /** `dev:ino` of the directory the OS watcher is attached to. */
  private watchedDir: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  private recheck = false;
  private closed = false;

  /** Takes the baseline at once (synchronously); call {@link start} to begin watching. */
  constructor(
    private readonly dir: string,
    private readonly name: string,
    private readonly pollIntervalMs: number,
    private readonly onChange: () => void,
  ) {
    this.path = join(dir, name);
    this.last = signatureSync(this.path);
  }

  /** Attaches the OS watcher (when the directory exists) and starts the poll. */
  start(): void {
    this.attach();
    if (this.pollIntervalMs > 0) {
      this.timer = setInterval(() => void this.poll(), this.pollIntervalMs);
      this.timer.unref();
    }
  }

  /** True while an OS watcher or poll timer is open. */
  get active(): boolean {
    return this.fsWatcher !== undefined || this.timer !== undefined;
  }

  /** The log was just written by this process: check it now. */
  changed(): void {
    this.check();
  }

  /** Stops watching. Idempotent. */
  close(): void {
    this.closed = true;
    this.detach();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private attach(): void {
    if (this.closed) return;
    try {
      const info = statSync(this.dir);
      const watcher = watch(this.dir, { persistent: false }, (_event, filename) => {
        // Some platforms report no file name: check then too.
        if (filename === null || filename === this.name) this.check();
      });
      watcher.on("error", () => {
        if (this.fsWatcher === watcher) this.detach();
      });
      this.fsWatcher = watcher;
      this.watchedDir = directoryIdentity(info);
    } catch {
      this.detach(); // no directory yet, or no more OS watchers (inotify limit): the poll covers it
    }
  }

  private detach(): void {
    this.fsWatcher?.close();
    this.fsWatcher = undefined;
    this.watchedDir = undefined;
  }

  private async poll(): Promise<void> {
    let current: string | undefined;
    try {
      current = directoryIdentity(await stat(this.dir));
    } catch {
      current = undefined;
    }
    if (this.closed) return;
    if (current !== this.watchedDir) {
      this.detach();
      if (current !== undefined) this.attach();
    }
    this.check();
  }

  /** Compares the log's signature with the last one seen; several calls while one runs make one more check. */
  private check(): void {
    if (this.closed) return;
    if (this.checking) {
      this.recheck = true;
      return;
    }
    this.checking = true;
    void this.compare();
  }

  private async compare(): Promise<void> {
    try {
      do {
        this.recheck = false;
        const signature = await signatureOf(this.path);
        if (this.closed) return;
        if (signature !== undefined && signature !== this.last) {
          // (A baseline taken mid-append is unknown: the first complete state after it counts as a change.)
          this.last = signature;
          this.onChange();
        }
      } while (this.recheck);
    } finally {
      this.checking = false;
    }
  }
}

/**
 * Tells a directory from one made again at the same path: a removed directory's
 * inode number is often reused at once (ext4), so its birth time is part of it.
 */
function directoryIdentity(info: Stats): string {
  return `${info.dev}:${info.ino}:${info.birthtimeMs}`;
}
