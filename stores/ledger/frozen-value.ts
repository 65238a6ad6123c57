/**
 * Deep-freezes `value` in place and returns it. Objects already frozen are
 * assumed deeply frozen and skipped, so freezing a state that shares frozen
 * messages costs only what is new. Stores and the runtime freeze what they
 * share (messages, artifacts, records) instead of copying it.
 */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const key of Object.keys(value as object)) deepFreeze((value as Record<string, unknown>)[key]);
  return value;
}

/**
 * A deep-frozen deep copy of `value`, the same as
 * `deepFreeze(structuredClone(value))` for the plain data agentd keeps
 * (messages, artifacts, custom state: arrays, plain objects, primitives) but
 * in one pass without the structured-clone serializer. Anything else inside
 * (a Date, a typed array, a class instance, a function) goes through
 * `structuredClone` as before, so it is copied, or rejected, the same way.
 */
export function frozenCopy<T>(value: T): T {
  if (value === null || typeof value !== "object") {
    return typeof value === "function" || typeof value === "symbol" ? structuredClone(value) : value;
  }
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) return deepFreeze(structuredClone(value));
    const copy = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = frozenCopy(value[i]);
    return Object.freeze(copy) as T;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return deepFreeze(structuredClone(value));
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = frozenCopy((value as Record<string, unknown>)[key]);
  return Object.freeze(copy) as T;
}
