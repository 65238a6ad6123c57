import { AgentError } from "../src/errors/agent-error.js";

/** Most labels one session may carry. */
export const MAX_LABELS = 64;
/** Longest label key (characters). */
export const MAX_LABEL_KEY_LENGTH = 63;
/** Longest label value (characters, i.e. Unicode code points). */
export const MAX_LABEL_VALUE_LENGTH = 256;

/** A label key: 1–63 characters of `[a-z0-9_.-]`, starting with a letter. */
const LABEL_KEY = /^[a-z][a-z0-9_.-]{0,62}$/;

/**
 * Checks session labels (on a head, an UpdateSession or a ListSessions
 * filter): a plain object of at most {@link MAX_LABELS} entries, each key
 * 1–63 characters of `[a-z0-9_.-]` starting with a letter, each value a
 * string of at most {@link MAX_LABEL_VALUE_LENGTH} characters (empty allowed).
 * Throws INVALID_ARGUMENT naming the offending label. Returns a fresh copy
 * (own enumerable entries only), safe to store.
 */
export function validateLabels(labels: unknown): Record<string, string> {
  if (labels === null || typeof labels !== "object" || Array.isArray(labels)) {
    throw new AgentError("INVALID_ARGUMENT", "labels must be an object mapping label keys to string values");
  }
  const entries = Object.entries(labels as Record<string, unknown>);
  if (entries.length > MAX_LABELS) {
    throw new AgentError("INVALID_ARGUMENT", `a session carries at most ${MAX_LABELS} labels (got ${entries.length})`);
  }
  const out: Record<string, string> = {};
  for (const [key, value] of entries) {
    if (!LABEL_KEY.test(key)) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `label key ${JSON.stringify(key.length > 80 ? `${key.slice(0, 80)}…` : key)} is invalid: 1-${MAX_LABEL_KEY_LENGTH} characters of a-z, 0-9, "_", "." and "-", starting with a letter`,
      );
    }
    if (typeof value !== "string") {
      throw new AgentError("INVALID_ARGUMENT", `label ${JSON.stringify(key)}: the value must be a string`);
    }
    const length = [...value].length;
    if (length > MAX_LABEL_VALUE_LENGTH) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `label ${JSON.stringify(key)}: the value has ${length} characters, at most ${MAX_LABEL_VALUE_LENGTH} are allowed`,
      );
    }
    out[key] = value;
  }
  return out;
}

/** True when `labels` carries every entry of `filter` with exactly its value (an empty or missing filter matches everything). */
export function labelsMatch(
  labels: Readonly<Record<string, string>> | undefined,
  filter: Readonly<Record<string, string>> | undefined,
): boolean {
  if (!filter) return true;
  for (const [key, value] of Object.entries(filter)) {
    if (!labels || !Object.hasOwn(labels, key) || labels[key] !== value) return false;
  }
  return true;
}
