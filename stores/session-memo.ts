/**
 * What a store remembers per session between calls (its last write, the rows
 * it last saw), bounded: past `limit` sessions, the one set longest ago is
 * forgotten. A hint for the next call, never the truth: its users check it
 * against the database (a guarded write) before they rely on it.
 */
export class SessionMemo<V> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly limit: number) {}

  /** What is remembered for `sessionId`, if anything. */
  get(sessionId: string): V | undefined {
    return this.entries.get(sessionId);
  }

  /** Remembers `value` for `sessionId` (now the most recently set). */
  set(sessionId: string, value: V): void {
    this.entries.delete(sessionId);
    this.entries.set(sessionId, value);
    if (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Forgets `sessionId`. */
  forget(sessionId: string): void {
    this.entries.delete(sessionId);
  }
}
