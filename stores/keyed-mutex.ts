/**
 * In-process mutual exclusion per key: `run(key, fn)` calls are serialised per
 * key (FIFO), different keys run concurrently. Entries are dropped when idle.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `fn` once every earlier `run` for `key` has settled; resolves to its result. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
