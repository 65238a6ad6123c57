/**
 * An iterator over `inner` that also ends when `ending` rejects: a `next()`
 * racing it rejects with that error, returns `inner` (releasing its work)
 * and calls `stop`; `inner` finishing or the caller returning early also
 * calls `stop` (which must be idempotent). `ending` must never resolve.
 */
export function endedBy<T>(inner: AsyncIterator<T>, ending: Promise<never>, stop: () => void): AsyncIterator<T> {
  ending.catch(() => undefined);
  return {
    next: () =>
      Promise.race([inner.next(), ending]).then(
        (result) => {
          if (result.done) stop();
          return result;
        },
        (err: unknown) => {
          stop();
          void inner.return?.().catch(() => undefined);
          throw err;
        },
      ),
    return: (value?: unknown) => {
      stop();
      return inner.return ? inner.return(value) : Promise.resolve({ done: true, value: undefined as T });
    },
  };
}
