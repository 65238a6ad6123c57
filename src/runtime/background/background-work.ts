import { DetachedControls } from "./detached-controls.js";

/** A unit of detached work the process may have to stop at shutdown. */
export interface BackgroundTask {
  /** Resolves when the work has ended (finalized or left pending). */
  readonly done: Promise<void>;
  /** Stops the work without finalizing its row (it stays pending and later reads as expired). */
  cancelForShutdown(): void;
}

/**
 * The detached invocations running in this process. Only used to drain at
 * shutdown: losing it loses nothing, since every row's truth is in the store.
 */
export class BackgroundWork {
  private readonly tasks = new Set<BackgroundTask>();
  /** The running detached work that control inputs (cancel, steer) can reach, by pending snapshot ID. */
  readonly controls = new DetachedControls();

  /** Tracks a task until its `done` settles. */
  track(task: BackgroundTask): void {
    this.tasks.add(task);
    void task.done.finally(() => this.tasks.delete(task));
  }

  /** Number of running tasks. */
  get size(): number {
    return this.tasks.size;
  }

  /**
   * Lets running tasks finish for up to `deadlineMs`, then cancels the rest
   * (their rows stay pending) and waits for them to stop. Resolves to the number
   * of tasks that had to be cancelled.
   */
  async drain(deadlineMs: number): Promise<number> {
    const all = Promise.allSettled([...this.tasks].map((t) => t.done));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), deadlineMs))),
    ]);
    clearTimeout(timer);
    if (!timedOut) return 0;
    const remaining = [...this.tasks];
    for (const task of remaining) task.cancelForShutdown();
    await Promise.allSettled(remaining.map((t) => t.done));
    return remaining.length;
  }
}
