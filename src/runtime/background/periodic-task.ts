/**
 * Runs `pass` now and then every `intervalMs`: passes never overlap (a pass
 * that is due while one runs waits for it), the timer does not keep the
 * process alive, and a pass that rejects (or throws) is handed to `onError`
 * and the next pass still runs. Returns a stop function: no pass starts
 * after it is called, and it resolves once a running pass has finished.
 */
export function startPeriodicTask(
  pass: () => Promise<void>,
  intervalMs: number,
  onError: (error: unknown) => void,
): () => Promise<void> {
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const schedule = (): void => {
    running = running.then(async () => {
      if (stopped) return;
      try {
        await pass();
      } catch (error) {
        onError(error);
      }
    });
  };
  schedule();
  const timer = setInterval(schedule, intervalMs);
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}
