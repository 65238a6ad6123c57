import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { CoalescedSync } from "./coalesced-sync.js";
import { datasyncDescriptor, openIfExists, writeAllSync } from "./descriptor-io.js";
import { syncDirectory } from "./directory-sync.js";
import { encodeJournalEntry, type BatchEntry, type JournalEntry } from "./journal-entry.js";

/** Tuning of {@link CommitJournal}. */
export interface CommitJournalOptions {
  /** A segment is closed for appends once this large. Default 8 MiB. */
  maxSegmentBytes?: number;
  /** …or once this old. Default 5 s. */
  maxSegmentAgeMs?: number;
}

/** What a recorded batch's writer does next. */
export interface JournalTicket {
  /** Resolves once the batch is on disk in the journal (a group fsync that started after it was written). */
  durable: Promise<void>;
  /** The batch is written to its session log (or failed and was cut off): the segment may retire. */
  done(): void;
  /** The batch failed after it was recorded: records that a replay must skip it, then `done`. */
  abort(): Promise<void>;
}

/** One journal file: appended until closed, then retired (removed) once its batches are durable in their logs. */
interface Segment {
  path: string;
  fd: number;
  size: number;
  startedAt: number;
  seq: number;
  sync: CoalescedSync;
  inflight: number;
  closed: boolean;
  /** Logs written through this segment, maps claimed in, and directories where a log was created. */
  logs: Set<string>;
  maps: Set<string>;
  dirs: Set<string>;
}

/** The first 8 hex digits of the kernel's boot ID (a segment of another boot is a dead process's), "" off Linux. */
export const BOOT_ID = ((): string => {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").replace(/-/g, "").slice(0, 8);
  } catch {
    return "";
  }
})();

/** The file name of a new segment of this process: `<boot>-<pid>-<ms>-<random>.jnl`. */
function segmentName(): string {
  return `${BOOT_ID || "noboot"}-${process.pid}-${Date.now()}-${randomBytes(4).toString("hex")}.jnl`;
}

/** The boot and pid a segment's file name names, or undefined for another file. */
export function segmentOwner(name: string): { boot: string; pid: number } | undefined {
  const match = /^([0-9a-f]{8}|noboot)-(\d+)-\d+-[0-9a-f]{8}\.jnl$/.exec(name);
  return match ? { boot: match[1]!, pid: Number(match[2]) } : undefined;
}

/**
 * The commit journal of one process in a file store (`journal/` in the store
 * directory): every batch is appended to the process's current segment, and
 * its writer waits for an fsync of the segment that started after the append
 * (concurrent commits of every session share one), instead of an fsync of
 * its own session log. The batch is then written to its log without an
 * fsync. A segment is closed after `maxSegmentBytes` or `maxSegmentAgeMs`
 * and retired once its batches are written: the logs, snapshot maps and
 * directories it touched are fsynced, then the segment is removed. A segment
 * left by a dead process is replayed (see `SessionLogs.replaySegment`).
 */
export class CommitJournal {
  private current: Segment | undefined;
  private readonly open = new Set<Segment>();
  private timer: NodeJS.Timeout | undefined;
  private readonly maxBytes: number;
  private readonly maxAgeMs: number;
  private closing = false;

  constructor(
    readonly dir: string,
    options: CommitJournalOptions = {},
  ) {
    this.maxBytes = options.maxSegmentBytes ?? 8 * 1024 * 1024;
    this.maxAgeMs = options.maxSegmentAgeMs ?? 5000;
  }

  /**
   * Appends a batch to the current segment (`created`: the batch creates its
   * log, so the log's directory is synced when the segment retires).
   */
  recordBatch(entry: Omit<BatchEntry, "kind" | "seq">, created: boolean): JournalTicket {
    const segment = this.segment();
    const seq = this.append(segment, { kind: "batch", seq: 0, ...entry });
    segment.logs.add(entry.log);
    if (entry.map) segment.maps.add(entry.map.path);
    if (created) segment.dirs.add(join(entry.log, ".."));
    segment.inflight++;
    let finished = false;
    const done = (): void => {
      if (finished) return;
      finished = true;
      segment.inflight--;
      this.maybeRetire(segment);
    };
    return {
      durable: segment.sync.request(),
      done,
      abort: async () => {
        try {
          this.append(segment, { kind: "abort", seq: 0, aborted: seq });
          await segment.sync.request();
        } finally {
          done();
        }
      },
    };
  }

  /**
   * Records that the log at `log` is removed; resolves once that is on disk.
   * The segment is closed then, so it (and with it the removed session's
   * batches) is retired as soon as the batches in flight are written.
   */
  async recordRemoval(log: string): Promise<void> {
    const segment = this.segment();
    this.append(segment, { kind: "removal", seq: 0, log });
    segment.inflight++;
    try {
      await segment.sync.request();
    } finally {
      segment.inflight--;
      this.closeSegment(segment);
    }
  }

  /** Number of segments this process has open or retiring (tests, diagnostics). */
  get segmentCount(): number {
    return this.open.size;
  }

  /** Closes the current segment and retires every segment whose batches are written. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.current) this.closeSegment(this.current);
    await Promise.all([...this.open].map((s) => this.retire(s)));
  }

  private segment(): Segment {
    const now = Date.now();
    const current = this.current;
    if (current && current.size < this.maxBytes && now - current.startedAt < this.maxAgeMs) return current;
    if (current) this.closeSegment(current);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const path = join(this.dir, segmentName());
    const fd = openSync(path, "wx", 0o600);
    const segment: Segment = {
      path,
      fd,
      size: 0,
      startedAt: now,
      seq: 0,
      sync: new CoalescedSync(() => datasyncDescriptor(fd)),
      inflight: 0,
      closed: false,
      logs: new Set(),
      maps: new Set(),
      dirs: new Set(),
    };
    this.current = segment;
    this.open.add(segment);
    if (!this.timer && !this.closing) {
      this.timer = setInterval(() => this.tick(), Math.max(10, this.maxAgeMs / 2));
      this.timer.unref();
    }
    return segment;
  }

  /** Appends `entry` (numbered next in the segment) with one write; resolves to its number. */
  private append(segment: Segment, entry: JournalEntry): number {
    const seq = ++segment.seq;
    const bytes = encodeJournalEntry({ ...entry, seq });
    writeAllSync(segment.fd, bytes);
    segment.size += bytes.length;
    return seq;
  }

  private tick(): void {
    const current = this.current;
    if (current && current.seq > 0 && Date.now() - current.startedAt >= this.maxAgeMs) this.closeSegment(current);
    if (this.open.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private closeSegment(segment: Segment): void {
    if (this.current === segment) this.current = undefined;
    segment.closed = true;
    this.maybeRetire(segment);
  }

  private maybeRetire(segment: Segment): void {
    if (segment.closed && segment.inflight === 0) void this.retire(segment).catch(() => undefined);
  }

  /** The retirements running, so that a segment is retired once. */
  private readonly retiring = new Map<Segment, Promise<void>>();

  /**
   * Makes what the segment's batches wrote durable (fsync of every log and
   * map it touched, and of the directories where it created logs), then
   * removes the segment. A log removed meanwhile needs nothing. On failure
   * the segment stays, for a replay.
   */
  private retire(segment: Segment): Promise<void> {
    if (!this.open.has(segment)) return Promise.resolve();
    let running = this.retiring.get(segment);
    if (!running) {
      running = (async () => {
        await segment.sync.request();
        for (const path of [...segment.logs, ...segment.maps]) await syncFileAt(path);
        for (const dir of segment.dirs) await syncDirectory(dir);
        closeSync(segment.fd);
        unlinkSync(segment.path);
        this.open.delete(segment);
      })().finally(() => this.retiring.delete(segment));
      this.retiring.set(segment, running);
    }
    return running;
  }
}

/** fdatasync of the file at `path`; nothing when it is gone. */
async function syncFileAt(path: string): Promise<void> {
  const fd = openIfExists(path, "r");
  if (fd === undefined) return;
  try {
    await datasyncDescriptor(fd);
  } finally {
    closeSync(fd);
  }
}
