import { FifoQueue } from "../../streams/fifo-queue.js";

/** The clock and scheduler a {@link TurnSlices} uses (injectable for tests). */
export interface TurnSliceClock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Runs `fn` in a later turn of the event loop, after pending I/O. */
  later(fn: () => void): void;
}

/**
 * The real clock, bound when this module loads: a test that fakes timers
 * afterwards does not stop turns from being admitted.
 */
const REAL_CLOCK: TurnSliceClock = (() => {
  const now = performance.now.bind(performance);
  const schedule = setImmediate;
  return { now, later: (fn) => void schedule(fn) };
})();

/** How long turn starts may go on in one slice before the next ones wait for a later turn of the event loop (ms). */
export const DEFAULT_TURN_SLICE_MS = 1;

/** Most turn starts admitted from the waiting line in one turn of the event loop. */
const SLOTS = 32;

/** Where one caller's turns wait for their start: a tenant's place in a {@link TurnSlices}. */
export interface TurnLine {
  /** Undefined when the turn may start now; otherwise a promise that resolves when its slice comes. Never rejects. */
  admit(): Promise<void> | undefined;
}

/**
 * Time-slices the start of turns across turns of the event loop, so a burst
 * of inputs cannot hold the loop: one socket read can carry the inputs of
 * hundreds of sessions, and on a store that answers in-process a turn runs
 * from its input to its TurnEnd without giving the loop back. Without
 * slicing, a health check or another tenant's call waited behind all of
 * them (loop turns of 40–160 ms at 200 busy sessions).
 *
 * A slice opens at the first turn start after the last slice closed, and
 * closes in the next turn of the event loop. Turns start at once while the
 * open slice is younger than `sliceMs`; after that, further starts wait and
 * are admitted in later turns of the event loop, one slice's worth each,
 * with the server's I/O (sockets, health checks) served between them. The
 * starts waiting are served tenant by tenant in turn (round-robin, one start
 * each), first come first served within a tenant (so a session's turns keep
 * their order): a tenant with a thousand turns waiting delays another
 * tenant's turn by one start of each tenant waiting, not by its thousand. A
 * turn that waits is delayed, never dropped. An idle server admits every
 * turn at once, with no hop: the cost is one clock read per turn, and one
 * scheduled callback per slice.
 */
export class TurnSlices implements TurnLine {
  /** Start of the open slice (clock ms), or undefined when none is open. */
  private sliceStart: number | undefined;
  /** Tenants with starts waiting, in the order they are served (a Map keeps insertion order), each its starts oldest first. */
  private readonly lines = new Map<string, FifoQueue<() => void>>();
  /** Starts waiting, all tenants. */
  private waiting = 0;
  /** Admission callbacks scheduled (each admits at most one start per turn of the event loop). */
  private slots = 0;

  constructor(
    private readonly sliceMs: number = DEFAULT_TURN_SLICE_MS,
    private readonly clock: TurnSliceClock = REAL_CLOCK,
  ) {}

  /** Turn starts waiting for a later slice (all tenants). */
  get queued(): number {
    return this.waiting;
  }

  /** The line of `tenant`'s turns (the tenant of the caller whose turns they are; "" without authentication). */
  line(tenant: string): TurnLine {
    return { admit: () => this.admit(tenant) };
  }

  /**
   * Undefined when the turn may start now (the fast path: nothing to await);
   * otherwise a promise that resolves when its slice comes, after the starts
   * waiting before it in `tenant`'s line. Never rejects.
   */
  admit(tenant = ""): Promise<void> | undefined {
    if (this.waiting === 0 && this.withinSlice()) return undefined;
    const admitted = new Promise<void>((resolve) => this.enqueue(tenant, resolve));
    while (this.slots < SLOTS) {
      this.slots++;
      this.clock.later(this.slot);
    }
    return admitted;
  }

  private enqueue(tenant: string, start: () => void): void {
    let line = this.lines.get(tenant);
    if (!line) this.lines.set(tenant, (line = new FifoQueue()));
    line.push(start);
    this.waiting++;
  }

  /** The oldest start of the first tenant in turn, which then goes to the back (or leaves, its line empty). */
  private next(): () => void {
    const [tenant, line] = this.lines.entries().next().value!;
    const start = line.shift()!;
    this.lines.delete(tenant);
    if (line.size > 0) this.lines.set(tenant, line);
    this.waiting--;
    return start;
  }

  /** True while the open slice has time left; opens one when none is open. */
  private withinSlice(): boolean {
    const now = this.clock.now();
    if (this.sliceStart === undefined) {
      this.sliceStart = now;
      this.clock.later(this.closeSlice);
      return true;
    }
    return now - this.sliceStart < this.sliceMs;
  }

  private readonly closeSlice = (): void => {
    this.sliceStart = undefined;
  };

  /**
   * One admission callback: admits the next waiting start if the slice has
   * time left, then comes back in the next turn of the event loop while
   * starts wait. Several run per turn of the loop; the admitted turn's
   * synchronous work (its microtasks) runs before the next one checks the
   * slice, so each check sees the time spent.
   */
  private readonly slot = (): void => {
    if (this.waiting > 0 && this.withinSlice()) this.next()();
    if (this.waiting === 0) this.slots--;
    else this.clock.later(this.slot);
  };
}

/** The slices this process's turns share: one event loop per process. */
export const PROCESS_TURN_SLICES = new TurnSlices();
