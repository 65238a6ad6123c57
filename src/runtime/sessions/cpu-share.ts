import { AgentError } from "../../errors/agent-error.js";

/** One step waiting for its turn. */
interface Job {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
}

/** One tenant's waiting steps and what is left of its share of the current round. */
interface TenantLine {
  jobs: Job[];
  credit: number;
}

/**
 * Weighted round-robin of the CPU-heavy synchronous steps of calls (applying
 * a fork's state / messages patch and checking the result against the state
 * schema) between tenants. At most one such step runs per turn of the event
 * loop: a step submitted while another ran in this turn waits for the next
 * turn, so between two heavy steps the server reads its sockets (another
 * tenant's light calls go on). Waiting steps are served tenant by tenant in
 * turn, `weight(tenant)` steps each per round (default 1), first come first
 * served within a tenant: a tenant that queues a hundred forks delays
 * another tenant's fork by one of its steps, not a hundred.
 *
 * A step submitted while nothing waits and none ran in this turn runs at once
 * (no extra turn of the event loop on an idle server).
 */
export class CpuShare {
  /** Tenants with waiting steps, in the order they are served (a Map keeps insertion order). */
  private readonly lines = new Map<string, TenantLine>();
  /** True from a step's run until the next turn of the event loop. */
  private busy = false;
  private waiting = 0;

  constructor(private readonly weight: (tenant: string) => number = () => 1) {}

  /** Steps waiting for their turn (all tenants). */
  get queued(): number {
    return this.waiting;
  }

  /**
   * Runs `work` (synchronous) for `tenant` when its turn comes; resolves or
   * rejects with its outcome. When `signal` aborts before the step runs, it
   * is dropped and the promise rejects with CANCELLED.
   */
  run<T>(tenant: string, work: () => T, signal?: AbortSignal): Promise<T> {
    if (!this.busy && this.waiting === 0) {
      this.hold();
      try {
        return Promise.resolve(work());
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return new Promise<T>((resolve, reject) => {
      let line = this.lines.get(tenant);
      if (!line) {
        line = { jobs: [], credit: this.creditOf(tenant) };
        this.lines.set(tenant, line);
      }
      line.jobs.push({ work, resolve: resolve as (value: unknown) => void, reject, signal });
      this.waiting++;
    });
  }

  /** Marks a step run in this turn of the event loop; the next waiting one runs in the next turn. */
  private hold(): void {
    this.busy = true;
    setImmediate(() => {
      this.busy = false;
      this.next();
    });
  }

  /** Runs the next waiting step, if any: the first tenant in line, which moves to the back once its round's share is used. */
  private next(): void {
    for (const [tenant, line] of this.lines) {
      const job = line.jobs.shift()!;
      this.waiting--;
      line.credit--;
      if (line.jobs.length === 0) this.lines.delete(tenant);
      else if (line.credit <= 0) {
        this.lines.delete(tenant);
        line.credit = this.creditOf(tenant);
        this.lines.set(tenant, line);
      }
      if (job.signal?.aborted) {
        job.reject(new AgentError("CANCELLED", "the call was cancelled while its step waited for its turn"));
        continue; // a dropped step takes no turn
      }
      this.hold();
      try {
        job.resolve(job.work());
      } catch (err) {
        job.reject(err);
      }
      return;
    }
  }

  private creditOf(tenant: string): number {
    const weight = this.weight(tenant);
    return Number.isFinite(weight) && weight >= 1 ? Math.floor(weight) : 1;
  }
}

/** The share this process's calls use: one CPU (one event loop) per process. */
export const PROCESS_CPU_SHARE = new CpuShare();
