import { writeSync } from "node:fs";

/** How long to wait before retrying a write the pipe refused (EAGAIN), in ms. */
const RETRY_MS = 1;

/** Default longest time an info or debug line waits in the buffer, in ms. */
export const DEFAULT_LOG_DELAY_MS = 25;

/** Buffered characters at which the buffer is written at the next check phase without waiting out the delay. */
const MAX_BUFFERED_CHARS = 64 * 1024;

/** pino's numeric level of warn; lines at it or above are written without the delay. */
const WARN = 40;

/** What {@link CoalescedLogDestination} can be told. */
export interface CoalescedLogOptions {
  /** Longest time an info (or lower) line waits in the buffer before it is written, in ms. Default {@link DEFAULT_LOG_DELAY_MS}. */
  delayMs?: number;
}

/**
 * A pino destination that coalesces log lines into few system calls: the
 * lines logged are joined and written to `fd` with one synchronous
 * `write(2)` at most `delayMs` (default 25 ms) after the first of them, so a
 * busy server writes its per-RPC and per-turn info lines in one call per
 * 25 ms instead of one or more per event-loop turn. A warn, error or fatal
 * line, or 64 KiB of buffered lines, has everything buffered written in the
 * check phase (`setImmediate`) right after the loop turn that logged it.
 * Lines stay in order. When the pipe is full (EAGAIN) the rest is retried
 * shortly without blocking the loop. At process exit (`exit` event:
 * `process.exit`, the end of the loop, a graceful shutdown, an uncaught
 * exception) whatever is still buffered is written synchronously, so
 * nothing logged is lost; only a process killed outright (SIGKILL) loses
 * the info lines of its last `delayMs`.
 */
export class CoalescedLogDestination {
  private readonly fd: number;
  private readonly delayMs: number;
  private pending = "";
  private partial: Buffer | undefined;
  /** A flush is scheduled: "soon" (check phase) or "later" (after the delay). */
  private scheduled: "soon" | "later" | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly onExit = (): void => this.flushSync();

  constructor(fd: number, options: CoalescedLogOptions = {}) {
    this.fd = fd;
    this.delayMs = options.delayMs ?? DEFAULT_LOG_DELAY_MS;
    process.on("exit", this.onExit);
  }

  /** Queues one serialized line (pino's stream contract). */
  write(line: string): boolean {
    this.pending += line;
    if (this.scheduled === "soon") return true;
    if (levelOf(line) >= WARN || this.pending.length >= MAX_BUFFERED_CHARS || this.delayMs <= 0) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      this.scheduled = "soon";
      setImmediate(() => this.flushSoon());
    } else if (!this.scheduled) {
      this.scheduled = "later";
      this.timer = setTimeout(() => this.flushSoon(), this.delayMs);
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
    if (this.timer) clearTimeout(this.timer);
  }

  private flushSoon(): void {
    this.scheduled = undefined;
    this.timer = undefined;
    while (!this.empty) {
      if (!this.writeSome()) break;
    }
    if (this.empty) return;
    this.scheduled = "soon";
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

/** The numeric pino level a serialized line starts with (`{"level":30,…`), or 0 when it does not. */
function levelOf(line: string): number {
  if (!line.startsWith('{"level":')) return 0;
  const level = Number.parseInt(line.slice(9, 12), 10);
  return Number.isNaN(level) ? 0 : level;
}
