import { AgentError } from "../../src/errors/agent-error.js";

/**
 * A record's metadata as stored: one JSON string per field, so a write that
 * changes one field (a heartbeat's `heartbeatAt`, a checkpoint's
 * `work.completed`) `$set`s that field's path only, and the oplog entry of a
 * heartbeat stays a few hundred bytes whatever the row holds (a 512 KiB
 * `work.initialState`, 16 kept controls). `meta` holds the record's fields
 * except `checkpoint`, `delta` and `work`; `work` holds the fields of the
 * detached work (absent when the record has none).
 */
export interface SplitFields {
  meta: Record<string, string>;
  work?: Record<string, string>;
}

/** Field names that can be a path segment (no ".", no leading "$"): every field a record or its work has. */
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** One JSON string per defined field of `value` (undefined fields are left out, as JSON.stringify does). */
function splitObject(value: object, where: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [key, field] of Object.entries(value)) {
    if (field === undefined) continue;
    if (!FIELD_NAME.test(key)) {
      throw new AgentError("INTERNAL", `cannot store ${where} field "${key}" in MongoDB: not a plain field name`);
    }
    fields[key] = JSON.stringify(field);
  }
  return fields;
}

/** Splits a record's metadata (the record without `checkpoint` and `delta`) into {@link SplitFields}. */
export function splitFields(meta: Record<string, unknown>): SplitFields {
  const { work, ...rest } = meta;
  const split: SplitFields = { meta: splitObject(rest, "record") };
  if (work !== undefined && work !== null) split.work = splitObject(work as object, "work");
  return split;
}

/** The metadata {@link splitFields} split (a fresh object). */
export function joinFields(split: SplitFields): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  for (const [key, json] of Object.entries(split.meta)) meta[key] = JSON.parse(json) as unknown;
  if (split.work) {
    const work: Record<string, unknown> = {};
    for (const [key, json] of Object.entries(split.work)) work[key] = JSON.parse(json) as unknown;
    meta.work = work;
  }
  return meta;
}

/** Serialized bytes of the split metadata (what the inline threshold and page budgets count). */
export function splitBytes(split: Partial<SplitFields>): number {
  let bytes = 0;
  for (const part of [split.meta, split.work]) {
    for (const [key, json] of Object.entries(part ?? {})) bytes += key.length + Buffer.byteLength(json, "utf8");
  }
  return bytes;
}

/**
 * The `$set` and `$unset` paths that turn `before` into `after`: one path
 * per changed field (`meta.<field>`, `work.<field>`), the whole `work` when
 * it appears or goes away.
 */
export function changedSplitFields(
  before: SplitFields,
  after: SplitFields,
): { set: Record<string, string | Record<string, string>>; unset: string[] } {
  const set: Record<string, string | Record<string, string>> = {};
  const unset: string[] = [];
  const diff = (prefix: string, from: Record<string, string>, to: Record<string, string>): void => {
    for (const [key, json] of Object.entries(to)) if (from[key] !== json) set[`${prefix}.${key}`] = json;
    for (const key of Object.keys(from)) if (!(key in to)) unset.push(`${prefix}.${key}`);
  };
  diff("meta", before.meta, after.meta);
  if (after.work && before.work) diff("work", before.work, after.work);
  else if (after.work) set.work = after.work;
  else if (before.work) unset.push("work");
  return { set, unset };
}
