import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LocalClaims, type LocalHolder } from "../../src/runtime/sessions/local-claims.js";

vi.setConfig({ testTimeout: 5_000 });

afterEach(() => {
  vi.useRealTimers();
});

/** A holder that records who interrupted it. */
function holder(invocationId: string): LocalHolder & { interruptedByIds: string[] } {
  const interruptedByIds: string[] = [];
  return { invocationId, interruptedByIds, interruptedBy: (byId) => interruptedByIds.push(byId) };
}

/** Whether `promise` has settled once pending callbacks and immediates have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise<void>((resolve) => setImmediate(resolve));
  return done;
}

describe("LocalClaims.interrupt", () => {
  it("tells only the named holder of the session, with the interrupting invocation", () => {
    const local = new LocalClaims();
    const a = holder("a");
    const b = holder("b");
    local.add("s", a);
    local.add("s", b);
    local.interrupt("s", "b", "x");
    expect(a.interruptedByIds).toEqual([]);
    expect(b.interruptedByIds).toEqual(["x"]);
  });

  it("still tells the first holder of a session after a second one was added", () => {
    const local = new LocalClaims();
    const a = holder("a");
    local.add("s", a);
    local.add("s", holder("b"));
    local.interrupt("s", "a", "x");
    expect(a.interruptedByIds).toEqual(["x"]);
  });

  it("no longer tells a removed holder", () => {
    const local = new LocalClaims();
    const a = holder("a");
    local.add("s", a);
    local.remove("s", a);
    local.interrupt("s", "a", "x");
    expect(a.interruptedByIds).toEqual([]);
  });

  it("keeps telling the other holders of a session after one was removed", () => {
    const local = new LocalClaims();
    const a = holder("a");
    const b = holder("b");
    local.add("s", a);
    local.add("s", b);
    local.remove("s", a);
    local.interrupt("s", "b", "x");
    expect(b.interruptedByIds).toEqual(["x"]);
  });

  it("keeps one registry per store", () => {
    const store = {};
    expect(LocalClaims.of(store)).toBe(LocalClaims.of(store));
    expect(LocalClaims.of({})).not.toBe(LocalClaims.of(store));
  });
});

describe("LocalClaims.waitForChange", () => {
  it("wakes every waiter of the session on a change, and only those", async () => {
    const local = new LocalClaims();
    const first = local.waitForChange("s", 60_000);
    const second = local.waitForChange("s", 60_000);
    const elsewhere = local.waitForChange("t", 60_000);
    local.changed("s");
    expect(await settled(first)).toBe(true);
    expect(await settled(second)).toBe(true);
    expect(await settled(elsewhere)).toBe(false);
    local.changed("t");
    await elsewhere;
  });

  it("still wakes the other waiters of a session after one of them timed out", async () => {
    const local = new LocalClaims();
    const short = local.waitForChange("s", 1);
    const long = local.waitForChange("s", 60_000);
    await short;
    local.changed("s");
    expect(await settled(long)).toBe(true);
  });

  it("resolves after its time when nothing changes", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const local = new LocalClaims();
    const waiting = local.waitForChange("s", 100);
    await vi.advanceTimersByTimeAsync(99);
    expect(await settled(waiting)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(waiting)).toBe(true);
  });

  it("wakes at once when its signal aborts", async () => {
    const local = new LocalClaims();
    const call = new AbortController();
    const waiting = local.waitForChange("s", 60_000, call.signal);
    call.abort();
    expect(await settled(waiting)).toBe(true);
  });

  it("returns at once, leaving no timer, when its signal aborted before the wait began", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const local = new LocalClaims();
    const call = new AbortController();
    call.abort();
    const waiting = local.waitForChange("s", 60_000, call.signal);
    expect(await settled(waiting)).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("cancels its timer when woken by a change", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const local = new LocalClaims();
    const waiting = local.waitForChange("s", 60_000);
    expect(vi.getTimerCount()).toBe(1);
    local.changed("s");
    await waiting;
    expect(vi.getTimerCount()).toBe(0);
  });

  it("stops listening to its signal once woken", async () => {
    const local = new LocalClaims();
    const call = new AbortController();
    await local.waitForChange("s", 1, call.signal);
    const woken = local.waitForChange("s", 60_000, call.signal);
    local.changed("s");
    await woken;
    expect(getEventListeners(call.signal, "abort")).toHaveLength(0);
  });
});
