/**
 * Switching an SQLite connection to WAL when other processes open the same
 * fresh file at the same moment. `PRAGMA journal_mode = WAL` can fail with
 * SQLITE_BUSY at once, without waiting for the busy timeout, while another
 * connection is switching the file itself (seen with several agentd
 * processes starting on a new database together), so the switch is retried
 * on BUSY and LOCKED until the busy timeout has passed.
 */

/** The part both the calling thread and the writer thread run (plain JavaScript, see sqlite-writer-source.ts). */
export const SWITCH_TO_WAL_SOURCE = String.raw`
function switchToWal(db, busyTimeoutMs) {
  const deadline = Date.now() + busyTimeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
    try {
      db.exec("PRAGMA journal_mode = WAL");
      return;
    } catch (err) {
      const code = err && typeof err.errcode === "number" ? err.errcode & 0xff : -1;
      if ((code !== 5 && code !== 6) || Date.now() >= deadline) throw err;
      Atomics.wait(pause, 0, 0, wait);
    }
  }
}`;

/** Sets `busy_timeout`, then switches `db` to WAL, retrying on SQLITE_BUSY / SQLITE_LOCKED until `busyTimeoutMs` has passed (blocks the thread meanwhile). */
export const switchToWal = new Function(`${SWITCH_TO_WAL_SOURCE}\nreturn switchToWal;`)() as (
  db: { exec(sql: string): void },
  busyTimeoutMs: number,
) => void;
