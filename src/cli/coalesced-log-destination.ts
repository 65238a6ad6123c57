import { writeSync } from "node:fs";

/** How long to wait before retrying a write the pipe refused (EAGAIN), in ms. */
const RETRY_MS = 1;

/**
 * A pino destination that coalesces log lines: the lines written during one
 * turn of the event loop are joined and written to `fd` with one synchronous
 * `write(2)` in the following check phase (`setImmediate`), instead of one
 * system call per line. Lines stay in order and arrive within the same loop
 * iteration they were logged in. When the pipe is full (EAGAIN) the rest is
 * retried shortly without blocking the loop. At process exit (`exit` event:
 * `process.exit`, the end of the loop, an uncaught exception) whatever is
 * still buffered is written synchronously, so nothing logged is lost.
 */
export class CoalescedLogDestination {
  private readonly fd: number;
  private pending = "";
  private partial: Buffer | undefined;
  private scheduled = false;
  private readonly onExit = (): void => this.flushSync();

  constructor(fd: number) {
    this.fd = fd;
    process.on("exit", this.onExit);
  }

  /** Queues one serialized line (pino's stream contract). */
  write(line: string): boolean {
    this.pending += line;
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flushSoon());
    }
    return true;
  }

  /** Writes everything buffered now; for pino's `logger.flush(cb)`. */
  flush(cb?: (err?: Error) => void): void {
    try {
      this.flushSync();
      cb?.();
    } catch (err) {
      cb?.(err as Error);
    }
  }

  /** Writes everything buffered, waiting out a full pipe; used at exit. */
  flushSync(): void {
    while (!this.empty) {
      if (!this.writeSome()) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, RETRY_MS);
    }
  }

  /** Stops flushing at exit (the fd stays open). */
  destroy(): void {
    process.off("exit", this.onExit);
  }

  private flushSoon(): void {
    this.scheduled = false;
    while (!this.empty) {
      if (!this.writeSome()) break;
    }
    if (this.empty) return;
    this.scheduled = true;
    setTimeout(() => this.flushSoon(), RETRY_MS);
  }

  /** One write of the buffer; false when the pipe is full (EAGAIN). Keeps what was not written. */
  private writeSome(): boolean {
    // A partly written buffer is kept as bytes (its cut may fall inside a character).
    const data: string | Buffer = this.partial ?? this.pending;
    let written: number;
    try {
      written = typeof data === "string" ? writeSync(this.fd, data) : writeSync(this.fd, data);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EAGAIN" || code === "EBUSY") return false;
      if (code !== "EPIPE") throw err;
      written = Infinity; // nobody reads the output any more: drop it
    }
    const bytes = typeof data === "string" ? Buffer.byteLength(data) : data.length;
    if (written >= bytes) {
      if (this.partial) this.partial = undefined;
      else this.pending = "";
      return true;
    }
    const rest = (typeof data === "string" ? Buffer.from(data) : data).subarray(written);
    if (!this.partial) this.pending = "";
    this.partial = rest;
    return true;
  }

  private get empty(): boolean {
    return this.pending.length === 0 && this.partial === undefined;
  }
}
