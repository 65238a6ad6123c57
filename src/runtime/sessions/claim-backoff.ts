/**
 * Pause before a session claim re-reads the head after losing a
 * compare-and-set (another instance or invocation wrote the head first):
 * none after the first loss, then a random wait growing to at most 200 ms,
 * so claimers racing on one session (or reading a head that lags behind
 * the writes) spread out instead of spinning on the store.
 */
export function claimConflictPause(conflicts: number): Promise<void> {
  if (conflicts < 2) return Promise.resolve();
  const ms = Math.min(200, 5 * 2 ** Math.min(conflicts, 6)) * Math.random();
  return new Promise((resolve) => setTimeout(resolve, ms));
}
