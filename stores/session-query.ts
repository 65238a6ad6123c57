import { AgentError } from "../src/errors/agent-error.js";
import { labelsMatch, validateLabels } from "./session-labels.js";
import type { HeadPage, SessionHead, SessionQuery } from "./snapshot-store.js";

/** Heads per page when a query sets no `pageSize`. */
export const DEFAULT_HEAD_PAGE_SIZE = 50;
/** Largest page `listHeads` returns (larger requests are clamped). */
export const MAX_HEAD_PAGE_SIZE = 1000;

/** The fields that order session heads (and page tokens point between). */
export interface HeadSortKey {
  updatedAt: number;
  sessionId: string;
}

/** A {@link SessionQuery} checked and with its defaults applied. */
export interface CheckedSessionQuery {
  owner: string;
  agent?: string;
  labels?: Record<string, string>;
  updatedAfter?: number;
  pageSize: number;
  /** Decoded page token: only heads strictly after this key (newest-first order). */
  after?: HeadSortKey;
  now: number;
}

/** Newest updatedAt first, ties broken by the greater sessionId (plain code-unit comparison). */
export function compareHeadsNewestFirst(a: HeadSortKey, b: HeadSortKey): number {
  if (a.updatedAt !== b.updatedAt) return b.updatedAt - a.updatedAt;
  return a.sessionId < b.sessionId ? 1 : a.sessionId > b.sessionId ? -1 : 0;
}

/** The page token pointing after `key`: `h.` + base64url of `[updatedAt, sessionId]`. */
export function encodeHeadPageToken(key: HeadSortKey): string {
  return `h.${Buffer.from(JSON.stringify([key.updatedAt, key.sessionId]), "utf8").toString("base64url")}`;
}

/** Decodes a token of {@link encodeHeadPageToken}; INVALID_ARGUMENT for anything else. */
export function decodeHeadPageToken(token: string): HeadSortKey {
  if (typeof token === "string" && token.startsWith("h.")) {
    try {
      const parsed: unknown = JSON.parse(Buffer.from(token.slice(2), "base64url").toString("utf8"));
      if (Array.isArray(parsed) && parsed.length === 2 && Number.isFinite(parsed[0]) && typeof parsed[1] === "string") {
        return { updatedAt: parsed[0] as number, sessionId: parsed[1] };
      }
    } catch {
      // reported below
    }
  }
  const shown = String(token).length > 80 ? `${String(token).slice(0, 80)}…` : String(token);
  throw new AgentError(
    "INVALID_ARGUMENT",
    `invalid session page token "${shown}": pass the nextPageToken of a previous page unchanged`,
  );
}

/**
 * Validates a query and applies its defaults: `owner` a string, `agent` a
 * string ("" = any), `labels` as `validateLabels`, `updatedAfter` and `now`
 * finite numbers, `pageSize` unset (50) or >= 1 (clamped to 1000; a
 * fraction is floored), `pageToken` one this module issued. Throws
 * INVALID_ARGUMENT naming the problem.
 */
export function checkSessionQuery(query: SessionQuery): CheckedSessionQuery {
  if (query === null || typeof query !== "object" || typeof query.owner !== "string") {
    throw new AgentError("INVALID_ARGUMENT", 'listing sessions needs an owner ("" for the anonymous owner)');
  }
  if (query.agent !== undefined && typeof query.agent !== "string") {
    throw new AgentError("INVALID_ARGUMENT", "the agent filter must be a string");
  }
  for (const [name, value] of [
    ["updatedAfter", query.updatedAfter],
    ["now", query.now],
  ] as const) {
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value))) {
      throw new AgentError("INVALID_ARGUMENT", `${name} must be an epoch-millisecond number (got ${String(value)})`);
    }
  }
  let pageSize = DEFAULT_HEAD_PAGE_SIZE;
  if (query.pageSize !== undefined) {
    if (typeof query.pageSize !== "number" || Number.isNaN(query.pageSize) || query.pageSize < 1) {
      throw new AgentError("INVALID_ARGUMENT", `page size must be at least 1 (got ${String(query.pageSize)})`);
    }
    pageSize = Math.min(Math.floor(query.pageSize), MAX_HEAD_PAGE_SIZE);
  }
  const checked: CheckedSessionQuery = { owner: query.owner, pageSize, now: query.now ?? Date.now() };
  if (query.agent) checked.agent = query.agent;
  if (query.labels !== undefined) {
    const labels = validateLabels(query.labels);
    if (Object.keys(labels).length > 0) checked.labels = labels;
  }
  if (query.updatedAfter !== undefined) checked.updatedAfter = query.updatedAfter;
  if (query.pageToken) checked.after = decodeHeadPageToken(query.pageToken);
  return checked;
}

/** True when the head has expired at `now` (expiresAt <= now). */
export function isExpired(head: Pick<SessionHead, "expiresAt">, now: number): boolean {
  return typeof head.expiresAt === "number" && head.expiresAt <= now;
}

/** True when `head` passes the query's filters (owner, agent, labels, updatedAfter, not expired, after the page token). */
export function headMatches(head: SessionHead, query: CheckedSessionQuery): boolean {
  if (head.owner !== query.owner) return false;
  if (query.agent !== undefined && head.agent !== query.agent) return false;
  if (query.updatedAfter !== undefined && !(head.updatedAt > query.updatedAfter)) return false;
  if (isExpired(head, query.now)) return false;
  if (query.after && compareHeadsNewestFirst(head, query.after) <= 0) return false;
  return labelsMatch(head.labels, query.labels);
}

/**
 * One page of heads out of every candidate head (any order): the matching
 * ones newest first, at most `pageSize`, with a token pointing after the last
 * when more match. O(n log n) in the candidates.
 */
export function pageOfHeads(candidates: Iterable<SessionHead>, query: CheckedSessionQuery): HeadPage {
  const matching: SessionHead[] = [];
  for (const head of candidates) if (headMatches(head, query)) matching.push(head);
  matching.sort(compareHeadsNewestFirst);
  const heads = matching.slice(0, query.pageSize);
  return matching.length > heads.length
    ? { heads, nextPageToken: encodeHeadPageToken(heads[heads.length - 1]!) }
    : { heads };
}
