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
