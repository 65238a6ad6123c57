import { describe, expect, it } from "vitest";
import { KeyedMutex } from "../../stores/keyed-mutex.js";

// In-process serialisation per key (stores/keyed-mutex.ts).

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe("KeyedMutex", () => {
  it("runs calls for one key one after another, in call order", async () => {
    const mutex = new KeyedMutex();
    const events: string[] = [];
    const first = gate();
    const a = mutex.run("k", async () => {
      events.push("a start");
      await first.opened;
      events.push("a end");
      return "a";
    });
    const b = mutex.run("k", async () => {
      events.push("b");
      return "b";
    });
    const c = mutex.run("k", async () => {
      events.push("c");
      return "c";
    });
    await Promise.resolve();
    await Promise.resolve();
    expect(events).toEqual(["a start"]);
    first.open();
    expect(await Promise.all([a, b, c])).toEqual(["a", "b", "c"]);
    expect(events).toEqual(["a start", "a end", "b", "c"]);
  });

  it("runs calls for different keys concurrently", async () => {
    const mutex = new KeyedMutex();
    const held = gate();
    const a = mutex.run("k1", () => held.opened.then(() => "a"));
    expect(await mutex.run("k2", async () => "b")).toBe("b");
    held.open();
    expect(await a).toBe("a");
  });

  it("releases the key when a call throws, and passes the error on", async () => {
    const mutex = new KeyedMutex();
    await expect(mutex.run("k", () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await mutex.run("k", async () => "next")).toBe("next");
  });

  it("makes a third call wait for the second, not only for the first", async () => {
    const mutex = new KeyedMutex();
    const events: string[] = [];
    const second = gate();
    const a = mutex.run("k", async () => void events.push("a"));
    const b = mutex.run("k", async () => {
      events.push("b start");
      await second.opened;
      events.push("b end");
    });
    await a;
    const c = mutex.run("k", async () => void events.push("c"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(["a", "b start"]);
    second.open();
    await Promise.all([b, c]);
    expect(events).toEqual(["a", "b start", "b end", "c"]);
  });

  it("keeps no entry for a key once its calls have settled", async () => {
    const mutex = new KeyedMutex();
    const tails = (mutex as unknown as { tails: Map<string, unknown> }).tails;
    const held = gate();
    const a = mutex.run("k", () => held.opened);
    const b = mutex.run("k", async () => undefined);
    expect(tails.size).toBe(1);
    held.open();
    await a;
    expect(tails.has("k")).toBe(true); // b is still queued behind a
    await b;
    expect(tails.size).toBe(0);
  });
});
