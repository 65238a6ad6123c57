/** Options of {@link until}. */
export interface UntilOptions {
  /** Give up after this long; default 30 s (a safety net on a loaded machine: the wait ends at the event). */
  timeoutMs?: number;
  /** Time between probes; default 20 ms. */
  intervalMs?: number;
}

/**
 * Waits for a condition that has no event to wait on (a file appearing, a
 * row changing in a store another process writes): calls `probe` until it
 * returns something other than `undefined` or `false` and resolves with that;
 * rejects naming `what` (and the last probe error) once `timeoutMs` has passed.
 * A probe that throws counts as "not yet".
 */
export async function until<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  options: UntilOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}`,
        lastError !== undefined ? { cause: lastError } : undefined,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 20));
  }
}
