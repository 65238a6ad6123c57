import { AgentError } from "../src/errors/agent-error.js";
import type { SnapshotPageRequest } from "./snapshot-store.js";

/** Page size used when a request does not set one. */
export const DEFAULT_PAGE_SIZE = 50;
/** Largest page a store returns, whatever the request asks. */
export const MAX_PAGE_SIZE = 1000;

/** The fields that order a session's snapshots. */
export interface SnapshotSortKey {
  createdAt: number;
  snapshotId: string;
}

/**
 * Newest-first order shared by every store: greater `createdAt` first, ties
 * broken by the greater `snapshotId` (plain code-unit comparison).
 */
export function compareNewestFirst(a: SnapshotSortKey, b: SnapshotSortKey): number {
  if (a.createdAt !== b.createdAt) return b.createdAt - a.createdAt;
  return a.snapshotId < b.snapshotId ? 1 : a.snapshotId > b.snapshotId ? -1 : 0;
}

/** Encodes the position after `key` as an opaque page token. */
export function encodePageToken(key: SnapshotSortKey): string {
  return Buffer.from(JSON.stringify([key.createdAt, key.snapshotId]), "utf8").toString("base64url");
}

/** Decodes a page token; INVALID_ARGUMENT when it was not produced by {@link encodePageToken}. */
export function decodePageToken(token: string): SnapshotSortKey {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (Array.isArray(parsed) && typeof parsed[0] === "number" && typeof parsed[1] === "string") {
      return { createdAt: parsed[0], snapshotId: parsed[1] };
    }
  } catch {
    // fall through
  }
  throw new AgentError(
    "INVALID_ARGUMENT",
    `invalid page token "${token}": pass the nextPageToken of a previous page unchanged`,
  );
}

/**
 * The effective page size for a request: the default when unset or 0,
 * otherwise clamped to 1..MAX_PAGE_SIZE. A negative size (or NaN) is refused
 * with INVALID_ARGUMENT rather than silently read as the default.
 */
export function pageSizeOf(page?: SnapshotPageRequest): number {
  const size = page?.pageSize;
  if (size === undefined || size === 0) return DEFAULT_PAGE_SIZE;
  if (typeof size !== "number" || !(size > 0)) {
    const message = `page size must not be negative (got ${String(size)}); leave it unset for the default ${DEFAULT_PAGE_SIZE}`;
    throw new AgentError("INVALID_ARGUMENT", message);
  }
  return Math.max(1, Math.min(Math.floor(size), MAX_PAGE_SIZE));
}

/** Index of the first key (in newest-first order) after the token's position; 0 without a token. */
export function pageStartIndex(sorted: readonly SnapshotSortKey[], pageToken?: string): number {
  if (!pageToken) return 0;
  const after = decodePageToken(pageToken);
  const start = sorted.findIndex((k) => compareNewestFirst(k, after) > 0);
  return start < 0 ? sorted.length : start;
}

/**
 * Cuts one page out of keys already sorted newest first: the items strictly
 * after the token's position, at most the page size, with a token when more
 * remain.
 */
export function pageOf<T extends SnapshotSortKey>(
  sorted: readonly T[],
  page?: SnapshotPageRequest,
): { items: T[]; nextPageToken?: string } {
  const size = pageSizeOf(page);
  const start = pageStartIndex(sorted, page?.pageToken);
  const items = sorted.slice(start, start + size);
  const hasMore = start + size < sorted.length;
  return hasMore ? { items, nextPageToken: encodePageToken(items[items.length - 1]!) } : { items };
}
