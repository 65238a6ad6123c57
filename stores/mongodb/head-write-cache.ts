import { SessionMemo } from "../session-memo.js";

/**
 * What this store last wrote to a session's head: its version, the token of
 * that write (in its slot of the head's `recentTokens` ring) and the stored
 * fields. The next head write from that version `$set`s only the fields that
 * changed (and `$unset`s the ones that went away) instead of every field,
 * guarded by the token: a head that is not exactly the one written (another
 * writer, a deleted and re-created session) does not match, and the write is
 * sent again in full.
 */
export interface WrittenHead {
  version: number;
  token: string;
  /** The fields as stored (no `_id`, no token bookkeeping). */
  fields: Record<string, unknown>;
}

/** How many sessions' last head writes a store remembers (the oldest is forgotten first). */
export const HEAD_WRITE_CACHE_SIZE = 10_000;

/** The last head write per session (bounded; see {@link WrittenHead}): `get`, `set` a write that landed, `forget`. */
export class HeadWriteCache extends SessionMemo<WrittenHead> {
  constructor(limit = HEAD_WRITE_CACHE_SIZE) {
    super(limit);
  }
}

/** The `recentTokens` slot of the write that produced `version` (the creating insert stores its token at 0). */
export function tokenSlot(version: number, slots: number): number {
  return version === 1 ? 0 : version % slots;
}
