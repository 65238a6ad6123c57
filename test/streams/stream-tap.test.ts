import { describe, expect, it, vi } from "vitest";
import { tapStream } from "../../src/streams/stream-tap.js";

/** An async generator source of `items`; `state.closed` turns true when its `finally` runs. */
function generatorSource<T>(items: T[]): { source: AsyncGenerator<T>; state: { closed: boolean } } {
  const state = { closed: false };
  async function* generate(): AsyncGenerator<T> {
    try {
      for (const item of items) yield item;
    } finally {
      state.closed = true;
    }
  }
  return { source: generate(), state };
}

/** An async generator source that yields `items`, then fails with `error`. */
async function* failingSource<T>(items: T[], error: unknown): AsyncGenerator<T> {
  for (const item of items) yield item;
  throw error;
}

/**
 * A hand-written source (only next and return, no throw) whose `n`-th next()
 * call (from 0) returns `step(n)`; counts its next() and return() calls.
 */
function handSource<T>(step: (n: number) => Promise<IteratorResult<T>>): {
  source: AsyncIterable<T>;
  calls: { next: number; return: number };
} {
  const calls = { next: 0, return: 0 };
  const iterator: AsyncIterator<T> = {
    next: () => step(calls.next++),
    return: () => {
      calls.return++;
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return { source: { [Symbol.asyncIterator]: () => iterator }, calls };
}

/** A hand-written endless source of 0, 1, 2, … */
function countingSource(): ReturnType<typeof handSource<number>> {
  return handSource((n) => Promise.resolve({ done: false, value: n }));
}

async function collect<T>(stream: AsyncIterable<T>, into: T[] = []): Promise<T[]> {
  for await (const item of stream) into.push(item);
  return into;
}

/** The tap.error used to see that an error was mapped: wraps it in an object. */
const wrap = (err: unknown) => ({ wrapped: err });

const boom = new Error("boom");

describe("tapStream items", () => {
  it("passes the source's items through in order", async () => {
    const { source } = generatorSource([1, 2, 3]);
    expect(await collect(tapStream(source, {}))).toStrictEqual([1, 2, 3]);
  });

  it("shows each item to tap.item before the consumer gets it", async () => {
    const log: string[] = [];
    const { source } = generatorSource([1, 2]);
    for await (const item of tapStream(source, { item: (value) => log.push(`tap ${value}`) })) {
      log.push(`consumer ${item}`);
    }
    expect(log).toStrictEqual(["tap 1", "consumer 1", "tap 2", "consumer 2"]);
  });

  it("pulls one item from the source per next() call, never ahead", async () => {
    const { source, calls } = countingSource();
    const iterator = tapStream(source, { item: () => {} })[Symbol.asyncIterator]();
    expect(calls.next).toBe(0);
    expect(await iterator.next()).toStrictEqual({ done: false, value: 0 });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(calls.next).toBe(1);
    expect(await iterator.next()).toStrictEqual({ done: false, value: 1 });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(calls.next).toBe(2);
  });
});

describe("tapStream with a throwing tap.item", () => {
  const throwAt2 = (value: number) => {
    if (value === 2) throw boom;
  };

  it("ends the stream with the item's error, mapped by tap.error", async () => {
    const { source } = generatorSource([1, 2, 3]);
    const seen: number[] = [];
    await expect(collect(tapStream(source, { item: throwAt2, error: wrap }), seen)).rejects.toStrictEqual({
      wrapped: boom,
    });
    expect(seen).toStrictEqual([1]);
  });

  it("ends the stream with the item's error unchanged when there is no tap.error", async () => {
    const { source } = generatorSource([1, 2, 3]);
    await expect(collect(tapStream(source, { item: throwAt2 }))).rejects.toBe(boom);
  });

  it("closes the source (its return() runs the generator's finally)", async () => {
    const { source, state } = generatorSource([1, 2, 3]);
    await expect(collect(tapStream(source, { item: throwAt2 }))).rejects.toBe(boom);
    expect(state.closed).toBe(true);
  });

  it("calls end once with the mapped error", async () => {
    const end = vi.fn();
    const { source } = generatorSource([1, 2, 3]);
    await expect(collect(tapStream(source, { item: throwAt2, error: wrap, end }))).rejects.toBeDefined();
    expect(end.mock.calls).toStrictEqual([[{ wrapped: boom }]]);
  });

  it("still gives the consumer the item's error when closing the source fails", async () => {
    const iterator: AsyncIterator<number> = {
      next: () => Promise.resolve({ done: false, value: 2 }),
      return: () => Promise.reject(new Error("return failed")),
    };
    const source = { [Symbol.asyncIterator]: () => iterator };
    await expect(collect(tapStream(source, { item: throwAt2, error: wrap }))).rejects.toStrictEqual({
      wrapped: boom,
    });
  });
});

describe("tapStream with a failing source", () => {
  it("gives the consumer the source's error as mapped by tap.error, after the items", async () => {
    const error = vi.fn(wrap);
    const seen: number[] = [];
    await expect(collect(tapStream(failingSource([1], boom), { error }), seen)).rejects.toStrictEqual({
      wrapped: boom,
    });
    expect(seen).toStrictEqual([1]);
    expect(error.mock.calls).toStrictEqual([[boom]]);
  });

  it("gives the consumer the source's error unchanged when there is no tap.error", async () => {
    await expect(collect(tapStream(failingSource([1], boom), {}))).rejects.toBe(boom);
  });
});

describe("tapStream end", () => {
  it("is called once with undefined when the source completes", async () => {
    const end = vi.fn();
    const { source } = generatorSource([1, 2]);
    const iterator = tapStream(source, { end })[Symbol.asyncIterator]();
    expect(end).not.toHaveBeenCalled();
    await collect({ [Symbol.asyncIterator]: () => iterator });
    expect(end.mock.calls).toStrictEqual([[undefined]]);
    await iterator.next();
    await iterator.return?.();
    expect(end).toHaveBeenCalledTimes(1);
  });

  it("is called once with the mapped error when the source fails", async () => {
    const end = vi.fn();
    const iterator = tapStream(failingSource([1], boom), { error: wrap, end })[Symbol.asyncIterator]();
    await expect(collect({ [Symbol.asyncIterator]: () => iterator })).rejects.toBeDefined();
    expect(end.mock.calls).toStrictEqual([[{ wrapped: boom }]]);
    await iterator.next();
    await iterator.return?.();
    expect(end).toHaveBeenCalledTimes(1);
  });

  it("is called once with undefined on an early return (break out of for-await)", async () => {
    const end = vi.fn();
    const { source } = generatorSource([1, 2, 3]);
    for await (const item of tapStream(source, { end })) {
      expect(end).not.toHaveBeenCalled();
      if (item === 1) break;
    }
    expect(end.mock.calls).toStrictEqual([[undefined]]);
  });

  it("is called once when a next() still pending at return() then completes", async () => {
    const end = vi.fn();
    let complete: (result: IteratorResult<number>) => void = () => {};
    const { source } = handSource<number>(() => new Promise((resolve) => (complete = resolve)));
    const iterator = tapStream(source, { end })[Symbol.asyncIterator]();
    const pending = iterator.next();
    await iterator.return?.();
    complete({ done: true, value: undefined });
    await pending;
    expect(end.mock.calls).toStrictEqual([[undefined]]);
  });
});

describe("tapStream return()", () => {
  it("closes the source on an early return (break out of for-await)", async () => {
    const { source, state } = generatorSource([1, 2, 3]);
    for await (const item of tapStream(source, {})) {
      if (item === 1) break;
    }
    expect(state.closed).toBe(true);
  });

  it("calls end only after the source's finally ran (as yield* does)", async () => {
    const { source, state } = generatorSource([1, 2, 3]);
    let closedAtEnd: boolean | undefined;
    const tapped = tapStream(source, { end: () => (closedAtEnd = state.closed) });
    for await (const item of tapped) if (item === 1) break;
    expect(closedAtEnd).toBe(true);
  });

  it("resolves done with the given value", async () => {
    const { source } = generatorSource([1, 2, 3]);
    const iterator = tapStream(source, {})[Symbol.asyncIterator]();
    await iterator.next();
    expect(await iterator.return?.(7)).toStrictEqual({ done: true, value: 7 });
  });
});

describe("tapStream after the end", () => {
  it("next() reports done after return(), without pulling from the source", async () => {
    const { source, calls } = countingSource();
    const iterator = tapStream(source, {})[Symbol.asyncIterator]();
    await iterator.next();
    await iterator.return?.();
    expect(await iterator.next()).toStrictEqual({ done: true, value: undefined });
    expect(calls.next).toBe(1);
  });

  it("next() reports done after a failure, without pulling from the source", async () => {
    const { source, calls } = handSource<number>((n) =>
      n === 0 ? Promise.reject(boom) : Promise.resolve({ done: false, value: n }),
    );
    const iterator = tapStream(source, {})[Symbol.asyncIterator]();
    await expect(iterator.next()).rejects.toBe(boom);
    expect(await iterator.next()).toStrictEqual({ done: true, value: undefined });
    expect(calls.next).toBe(1);
  });

  it("return() does not call the source's return() again", async () => {
    const { source, calls } = countingSource();
    const iterator = tapStream(source, {})[Symbol.asyncIterator]();
    await iterator.next();
    await iterator.return?.();
    expect(await iterator.return?.(7)).toStrictEqual({ done: true, value: 7 });
    expect(calls.return).toBe(1);
  });

  it("throw(err) rejects with err as given, without reaching the source", async () => {
    const sourceThrow = vi.fn(() => Promise.resolve({ done: true as const, value: undefined }));
    const source = {
      [Symbol.asyncIterator]: (): AsyncIterator<number> => ({
        next: () => Promise.resolve({ done: true, value: undefined }),
        throw: sourceThrow,
      }),
    };
    const iterator = tapStream(source, { error: wrap })[Symbol.asyncIterator]();
    await iterator.next();
    const late = new Error("late");
    await expect(iterator.throw?.(late)).rejects.toBe(late);
    expect(sourceThrow).not.toHaveBeenCalled();
  });
});

describe("tapStream throw()", () => {
  /** An async generator source that catches an error thrown in at its yield, records it and returns. */
  function catchingSource(): { source: AsyncGenerator<number>; caught: unknown[] } {
    const caught: unknown[] = [];
    async function* generate(): AsyncGenerator<number> {
      try {
        yield 1;
        yield 2;
      } catch (err) {
        caught.push(err);
      }
    }
    return { source: generate(), caught };
  }

  it("passes the error to the source's throw", async () => {
    const { source, caught } = catchingSource();
    const iterator = tapStream(source, {})[Symbol.asyncIterator]();
    await iterator.next();
    await iterator.throw?.(boom);
    expect(caught).toStrictEqual([boom]);
  });

  it("resolves done and calls end(undefined) when the source catches it and returns", async () => {
    const end = vi.fn();
    const { source } = catchingSource();
    const iterator = tapStream(source, { end })[Symbol.asyncIterator]();
    await iterator.next();
    expect(await iterator.throw?.(boom)).toStrictEqual({ done: true, value: undefined });
    expect(end.mock.calls).toStrictEqual([[undefined]]);
  });

  it("rejects with the mapped error and passes it to end when the source does not catch it", async () => {
    const end = vi.fn();
    const { source, state } = generatorSource([1, 2]);
    const iterator = tapStream(source, { error: wrap, end })[Symbol.asyncIterator]();
    await iterator.next();
    await expect(iterator.throw?.(boom)).rejects.toStrictEqual({ wrapped: boom });
    expect(end.mock.calls).toStrictEqual([[{ wrapped: boom }]]);
    expect(state.closed).toBe(true);
  });

  it("closes a source without throw() via its return()", async () => {
    const { source, calls } = countingSource();
    const iterator = tapStream(source, {})[Symbol.asyncIterator]();
    await iterator.next();
    await expect(iterator.throw?.(boom)).rejects.toBeDefined();
    expect(calls.return).toBe(1);
  });

  it("rejects with the mapped error and passes it to end when the source has no throw()", async () => {
    const end = vi.fn();
    const { source } = countingSource();
    const iterator = tapStream(source, { error: wrap, end })[Symbol.asyncIterator]();
    await iterator.next();
    await expect(iterator.throw?.(boom)).rejects.toStrictEqual({ wrapped: boom });
    expect(end.mock.calls).toStrictEqual([[{ wrapped: boom }]]);
  });
});
