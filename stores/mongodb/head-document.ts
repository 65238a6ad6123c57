import type { Collection } from "mongodb";
import type { SessionHead } from "../snapshot-store.js";
import { tokenSlot, type HeadWriteCache } from "./head-write-cache.js";
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
  recentTokens?: (string | null)[];
  /**
   * The commit tokens of the turns whose record may still be marked
   * `pending` (`{<token>: 1}`): set by the head write that commits the turn
   * and removed only after the record's mark is cleared (see
   * commit-settlement.ts). This is the proof a reader and the sweep use to
   * tell that a pending record's commit landed; unlike `recentTokens` it
   * never slides out, however many writes follow.
   */
  pendingCommits?: Record<string, 1>;
  /**
   * Tokens proven never to land (the last {@link FENCED_TOKENS}): a commit
   * whose outcome was unknown, or the sweep about to delete a pending record,
   * adds the token here in one conditional update that fails if the token
   * landed; every head write filters on `fencedTokens: {$ne: token}`, so a
   * delayed write carrying a fenced token can never land afterwards.
   */
  fencedTokens?: string[];
}

/** How many head-write tokens a head document keeps (`recentTokens`, a ring indexed by version). */
export const RECENT_TOKENS = 32;

/** How many fenced tokens a head document keeps (`fencedTokens`). */
export const FENCED_TOKENS = 16;

/** The projection that leaves the token bookkeeping out (the reads that return heads do not need it). */
export const WITHOUT_TOKENS = { recentTokens: 0, pendingCommits: 0, fencedTokens: 0 } as const;

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
  const {
    _id,
    labelPairs,
    expireAt: _expireAt,
    deletingAt: _deletingAt,
    recentTokens: _tokens,
    pendingCommits: _pending,
    fencedTokens: _fenced,
    ...fields
  } = doc;
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

/** What a head write records besides the head's fields. */
export interface HeadWriteMarks {
  /** The write commits a turn whose record is marked pending: `pendingCommits.<token>` is set. */
  commitsRecord?: boolean;
  /** Tokens of records this instance has settled since: their `pendingCommits` entries are removed. */
  settled?: readonly string[];
  /** This store's last head writes: a write from the version it last wrote sends only the changed fields. */
  cache?: HeadWriteCache;
}

/** The `pendingCommits` path of a token (tokens are UUIDs: no "." or "$"). */
export function pendingCommitPath(token: string): string {
  return `pendingCommits.${token}`;
}

/**
 * Compare-and-set of a head: inserts it when `expectedVersion` is 0 (fails
 * when the session exists, also while it is being deleted), otherwise
 * replaces its fields where the stored version equals `expectedVersion` and
 * `token` is not fenced; either way writes `token` into its slot of the
 * `recentTokens` ring (one element, `version % RECENT_TOKENS`) and, for a
 * turn commit, into `pendingCommits`. With `marks.cache` holding this
 * store's own write of `expectedVersion`, it sends only the fields that
 * changed since (a head write of a turn is then a few hundred bytes), on
 * the condition that the head is still exactly that write; otherwise every
 * field. False on a version conflict (or a fenced token); an error may leave
 * the outcome unknown (see commit-outcome.ts).
 */
export async function writeHead(
  heads: Collection<HeadDocument>,
  head: SessionHead,
  expectedVersion: number,
  token: string,
  ttlGraceMs = 0,
  marks: HeadWriteMarks = {},
): Promise<boolean> {
  const fields = storedFields(head, ttlGraceMs);
  const remember = (landed: boolean): boolean => {
    if (landed) marks.cache?.set(head.sessionId, { version: head.version, token, fields });
    else marks.cache?.forget(head.sessionId);
    return landed;
  };
  if (expectedVersion === 0) {
    try {
      await heads.insertOne({
        _id: head.sessionId,
        ...fields,
        recentTokens: [token],
        ...(marks.commitsRecord ? { pendingCommits: { [token]: 1 } } : {}),
      } as HeadDocument);
      return remember(true);
    } catch (err) {
      marks.cache?.forget(head.sessionId);
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  }
  const unset: Record<string, ""> = {};
  for (const settled of marks.settled ?? []) if (settled !== token) unset[pendingCommitPath(settled)] = "";
  const set: Record<string, unknown> = { [`recentTokens.${(expectedVersion + 1) % RECENT_TOKENS}`]: token };
  if (marks.commitsRecord) set[pendingCommitPath(token)] = 1;
  const filter = { _id: head.sessionId, version: expectedVersion, fencedTokens: { $ne: token } };
  const update = (changes: { set: Record<string, unknown>; unset: Record<string, ""> }) =>
    Object.keys(changes.unset).length > 0 ? { $set: changes.set, $unset: changes.unset } : { $set: changes.set };
  const last = marks.cache?.get(head.sessionId);
  marks.cache?.forget(head.sessionId); // until this write's outcome is known
  if (last && last.version === expectedVersion) {
    // Only what changed since this store's own last write, on exactly that head (its token in its slot).
    const lean = { set: { ...set }, unset: { ...unset } };
    for (const [key, value] of Object.entries(fields))
      if (JSON.stringify(last.fields[key]) !== JSON.stringify(value)) lean.set[key] = value;
    for (const key of Object.keys(last.fields)) if (!(key in fields)) lean.unset[key] = "";
    const slot = `recentTokens.${tokenSlot(expectedVersion, RECENT_TOKENS)}`;
    const result = await heads.updateOne({ ...filter, [slot]: last.token }, update(lean));
    if (result.matchedCount === 1) return remember(true);
  }
  for (const key of OPTIONAL_FIELDS) if (!(key in fields)) unset[key] = "";
  const result = await heads.updateOne(filter, update({ set: { ...fields, ...set }, unset }));
  return remember(result.matchedCount === 1);
}

/** True when the head document shows that the head write carrying `token` landed. */
export function holdsToken(doc: Pick<HeadDocument, "recentTokens" | "pendingCommits"> | null, token: string): boolean {
  if (!doc) return false;
  return (doc.recentTokens ?? []).includes(token) || doc.pendingCommits?.[token] === 1;
}
