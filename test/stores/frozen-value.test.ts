import { describe, expect, it, onTestFinished, vi } from "vitest";
import { deepFreeze, frozenCopy } from "../../stores/ledger/frozen-value.js";

// How stores and the runtime share values instead of copying them (stores/ledger/frozen-value.ts).

describe("deepFreeze", () => {
  it("freezes an object and everything in it, in place", () => {
    const value = { a: { b: [1, { c: 2 }] } };
    expect(deepFreeze(value)).toBe(value);
    expect(Object.isFrozen(value.a)).toBe(true);
    expect(Object.isFrozen(value.a.b)).toBe(true);
    expect(Object.isFrozen(value.a.b[1])).toBe(true);
  });

  it("skips an object that is already frozen (assumed deeply frozen), leaving what is inside as it is", () => {
    const inner = { n: 1 };
    const outer = Object.freeze({ inner });
    deepFreeze(outer);
    expect(Object.isFrozen(inner)).toBe(false);
  });

  it("returns primitives and null unchanged", () => {
    expect(deepFreeze(null)).toBe(null);
    expect(deepFreeze(5)).toBe(5);
    expect(deepFreeze("s")).toBe("s");
  });
});

/** A spy on the global structuredClone for the rest of the current test. */
function spyOnStructuredClone() {
  const spy = vi.spyOn(globalThis, "structuredClone");
  onTestFinished(() => spy.mockRestore());
  return spy;
}

describe("frozenCopy", () => {
  it("copies plain data into a new, deeply frozen value and leaves the original unfrozen", () => {
    const value = { messages: [{ text: "hi" }], n: 1 };
    const copy = frozenCopy(value);
    expect(copy).toEqual(value);
    expect(copy).not.toBe(value);
    expect(copy.messages[0]).not.toBe(value.messages[0]);
    expect(Object.isFrozen(copy.messages[0])).toBe(true);
    expect(Object.isFrozen(value)).toBe(false);
  });

  it("copies a Date or a class instance the way structuredClone does", () => {
    const when = new Date(5);
    const copy = frozenCopy({ when, map: new Map([["k", 1]]) });
    expect(copy.when).toBeInstanceOf(Date);
    expect(copy.when).not.toBe(when);
    expect(copy.when.getTime()).toBe(5);
    expect(copy.map.get("k")).toBe(1);
  });

  it("rejects a function inside the value as structuredClone does", () => {
    expect(() => frozenCopy({ f: () => 1 })).toThrow(DOMException);
  });

  it("rejects a symbol inside the value as structuredClone does", () => {
    expect(() => frozenCopy({ s: Symbol("s") })).toThrow(DOMException);
  });

  it("copies arrays, plain objects and null-prototype objects in one pass, without the structured-clone serializer", () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { k: [1, "two", null] });
    const spy = spyOnStructuredClone();
    const copy = frozenCopy({ list: [{ a: 1 }, [2, 3]], bare });
    expect(spy).not.toHaveBeenCalled();
    expect(Array.isArray(copy.list)).toBe(true);
    expect(Object.isFrozen(copy.list)).toBe(true);
    expect(copy.list).toEqual([{ a: 1 }, [2, 3]]);
    expect(copy.bare.k).toEqual([1, "two", null]);
    expect(Object.isFrozen(copy.bare)).toBe(true);
  });

  it("copies an array of a subclass through structuredClone, the way it copies any other class instance", () => {
    class Tagged extends Array<number> {}
    const tagged = Tagged.from([1, 2]);
    const spy = spyOnStructuredClone();
    const copy = frozenCopy({ tagged });
    expect(spy).toHaveBeenCalledTimes(1);
    expect(Object.getPrototypeOf(copy.tagged)).toBe(Array.prototype);
    expect([...copy.tagged]).toEqual([1, 2]);
    expect(Object.isFrozen(copy.tagged)).toBe(true);
  });
});
