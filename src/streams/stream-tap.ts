/** What {@link tapStream} does at each step of the stream it wraps. */
export interface StreamTap<T> {
  /** Sees every item before the consumer does; throwing ends the stream with that error (the source is closed). */
  item?: (value: T) => void;
  /** Maps an error of the source (or of `item`) to the error the consumer gets. Default: unchanged. */
  error?: (err: unknown) => unknown;
  /** Called once when the stream ends: `err` is the (mapped) error, or undefined for a normal end or an early return. */
  end?: (err: unknown) => void;
}

/**
 * Wraps `source` so that `tap` sees its items, its end and its error, without
 * the promise hops an `async function*` with `yield*` adds to every item (an
 * interceptor wraps every message of every stream). Pulls one item per
 * `next()` call, never ahead; `return()` closes the source. Like an async
 * generator, `end` runs exactly once.
 */
export function tapStream<T>(source: AsyncIterable<T>, tap: StreamTap<T>): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const inner = source[Symbol.asyncIterator]();
      let ended = false;
      const end = (err: unknown): void => {
        if (ended) return;
        ended = true;
        tap.end?.(err);
      };
      const fail = (err: unknown): never => {
        const mapped = tap.error ? tap.error(err) : err;
        end(mapped);
        throw mapped;
      };
      const closeThenFail = async (err: unknown): Promise<never> => {
        try {
          await inner.return?.();
        } catch {
          // The item's error is what the consumer gets.
        }
        return fail(err);
      };
      return {
        next(): Promise<IteratorResult<T>> {
          if (ended) return Promise.resolve({ done: true, value: undefined });
          return inner.next().then((result) => {
            if (result.done) {
              end(undefined);
              return result;
            }
            if (tap.item) {
              try {
                tap.item(result.value);
              } catch (err) {
                return closeThenFail(err);
              }
            }
            return result;
          }, fail);
        },
        throw(err?: unknown): Promise<IteratorResult<T>> {
          // A downstream failure (connect aborting the response pipe): the
          // source sees it like an async generator's yield* would pass it on.
          if (ended) return Promise.reject(err);
          if (!inner.throw) return closeThenFail(err);
          return inner.throw(err).then((result) => {
            if (result.done) end(undefined);
            return result;
          }, fail);
        },
        async return(value?: unknown): Promise<IteratorResult<T>> {
          // The source closes first (its finally blocks run), then `end`: as with `yield*`.
          if (!ended) {
            try {
              await inner.return?.(value);
            } catch (err) {
              fail(err);
            }
            end(undefined);
          }
          return { done: true, value: value as T };
        },
      };
    },
  };
}
