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

/** The last head write per session (bounded; see {@link WrittenHead}). */
export class HeadWriteCache {
  private readonly entries = new Map<string, WrittenHead>();

  constructor(private readonly limit = HEAD_WRITE_CACHE_SIZE) {}

  /** The last write this store made to the session's head, if remembered. */
  get(sessionId: string): WrittenHead | undefined {
    return this.entries.get(sessionId);
  }

  /** Remembers a head write that landed. */
  set(sessionId: string, written: WrittenHead): void {
    this.entries.delete(sessionId);
    this.entries.set(sessionId, written);
    if (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Forgets a session's head (a write whose outcome was learnt another way, a deletion). */
  forget(sessionId: string): void {
    this.entries.delete(sessionId);
  }
}

/** The `recentTokens` slot of the write that produced `version` (the creating insert stores its token at 0). */
export function tokenSlot(version: number, slots: number): number {
  return version === 1 ? 0 : version % slots;
}
