import type { Collection } from "mongodb";
import type { SessionHead } from "../snapshot-store.js";
import { isDuplicateKey } from "./mongo-errors.js";

/**
 * How a session head is stored in `<prefix>heads`: `_id = sessionId`, the
 * head's fields, `version` the CAS key, with two changes so MongoDB can index
 * and filter them:
 *
 * - `labels` is stored as `labelPairs`, an array of `"<key>=<value>"` strings
 *   (a label key never holds "=", so the first "=" splits it). Label keys may
 *   contain ".", which a `labels.<key>` path would read as nesting; an
 *   equality filter on each pair (`labelPairs: {$all: [...]}`) has no such
 *   problem and needs no `$expr`.
 * - `expiresAt` (epoch ms) is also stored as the BSON Date `expireAt`, the
 *   field of the TTL index (`expireAfterSeconds: 0`), so MongoDB removes an
 *   expired head by itself even when no agentd sweeps (`expireAt` is later
 *   by the store's `ttlGraceMs`, when set, so that a sweep comes first).
 *
 * `deletingAt` marks a head whose session `deleteSession` is removing (see
 * there): every read treats such a document as absent, and its `version` is
 * {@link DELETING_VERSION}, which no compare-and-set ever names.
 */
export interface HeadDocument extends Omit<SessionHead, "sessionId" | "labels"> {
  _id: string;
  /** The labels as `"<key>=<value>"` strings; absent without labels. */
  labelPairs?: string[];
  /** `expiresAt` as a Date (TTL index); absent without ttlMs. A deletion marker sets it to the deletion time. */
  expireAt?: Date;
  /** Set while deleteSession removes the session: the head reads as absent. */
  deletingAt?: Date;
  /** Only in documents that stored the labels as an object (not written by this version; read for completeness). */
  labels?: Readonly<Record<string, string>>;
  /**
   * The tokens of the last {@link RECENT_TOKENS} head writes, oldest first
   * (each write pushes its own, a value unique to the `commit` call): how a commit whose outcome is unknown finds
   * out whether it landed even when later writes moved the head on, and how
   * a reader tells a record of a commit that landed from one that did not
   * (see commit-outcome.ts). Never part of the SessionHead.
   */
  recentTokens?: string[];
}

/** How many head-write tokens a head document keeps (`recentTokens`). */
export const RECENT_TOKENS = 32;

/** The projection that leaves `recentTokens` out (the reads that return heads do not need them). */
export const WITHOUT_TOKENS = { recentTokens: 0 } as const;

/** The version of a head being deleted: never an `expectedVersion` (those are >= 0), so every CAS on it fails. */
export const DELETING_VERSION = -1;

/** Optional head fields: removed (`$unset`) when a write leaves them out. */
const OPTIONAL_FIELDS = [
  "lease",
  "waiters",
  "labelPairs",
  "labels",
  "ttlMs",
  "expiresAt",
  "expireAt",
  "usage",
  "requests",
  "commitToken",
] as const;

/** The filter of a head that is not being deleted (combine with `_id` or a listing's filter). */
export const LIVE_HEAD = { deletingAt: { $exists: false } } as const;

/** `"<key>=<value>"`: one stored label. */
export function labelPair(key: string, value: string): string {
  return `${key}=${value}`;
}

/** The head stored in a document. */
export function fromHeadDocument(doc: HeadDocument): SessionHead {
  const { _id, labelPairs, expireAt: _expireAt, deletingAt: _deletingAt, recentTokens: _tokens, ...fields } = doc;
  const head: SessionHead = { sessionId: _id, ...fields };
  if (labelPairs) {
    const labels: Record<string, string> = {};
    for (const pair of labelPairs) {
      const at = pair.indexOf("=");
      labels[pair.slice(0, at)] = pair.slice(at + 1);
    }
    head.labels = labels;
  }
  for (const key of ["lease", "waiters", "labels", "ttlMs", "expiresAt", "usage", "requests", "commitToken"] as const)
    if (head[key] == null) delete head[key];
  return head;
}

/** The head's fields as stored (no `_id`, no undefined values, which the driver would store as null); `expireAt` is `ttlGraceMs` after `expiresAt`. */
function storedFields(head: SessionHead, ttlGraceMs: number): Omit<HeadDocument, "_id"> {
  const { sessionId: _sessionId, labels, ...rest } = head;
  const fields = JSON.parse(JSON.stringify(rest)) as Omit<HeadDocument, "_id">;
  if (labels) fields.labelPairs = Object.entries(labels).map(([key, value]) => labelPair(key, value));
  if (typeof head.expiresAt === "number") fields.expireAt = new Date(head.expiresAt + ttlGraceMs);
  return fields;
}

/**
 * Compare-and-set of a head: inserts it when `expectedVersion` is 0 (fails
 * when the session exists, also while it is being deleted), otherwise
 * replaces its fields where the stored version equals `expectedVersion`;
 * either way pushes `token` onto `recentTokens` (keeping the last
 * {@link RECENT_TOKENS}). False on a version conflict; an error may leave
 * the outcome unknown (see commit-outcome.ts).
 */
export async function writeHead(
  heads: Collection<HeadDocument>,
  head: SessionHead,
  expectedVersion: number,
  token: string,
  ttlGraceMs = 0,
): Promise<boolean> {
  const fields = storedFields(head, ttlGraceMs);
  if (expectedVersion === 0) {
    try {
      await heads.insertOne({ _id: head.sessionId, ...fields, recentTokens: [token] });
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  }
  const unset: Record<string, ""> = {};
  for (const key of OPTIONAL_FIELDS) if (!(key in fields)) unset[key] = "";
  const push = { recentTokens: { $each: [token], $slice: -RECENT_TOKENS } };
  const result = await heads.updateOne(
    { _id: head.sessionId, version: expectedVersion },
    Object.keys(unset).length > 0 ? { $set: fields, $unset: unset, $push: push } : { $set: fields, $push: push },
  );
  return result.matchedCount === 1;
}
