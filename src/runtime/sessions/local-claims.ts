/** What the registry needs of a running claim (a {@link SessionClaim} in practice). */
export interface LocalHolder {
  readonly invocationId: string;
  /** The request ID of the input the holder is running, if it carried one. */
  readonly runningRequestId?: string | undefined;
  /** Told when an INTERRUPT in this process took the session from this holder. */
  interruptedBy(byId: string): void;
}

/**
 * This process's running claims per store and session, used only to make
 * in-process hand-offs immediate: an INTERRUPT tells a local holder at once
 * (a holder in another process notices at its next lease refresh or commit),
 * and a release wakes local ENQUEUE waiters (others poll). Losing this
 * registry loses nothing: the session head in the store is the truth.
 */
export class LocalClaims {
  private static readonly byStore = new WeakMap<object, LocalClaims>();
  private readonly claims = new Map<string, Set<LocalHolder>>();
  private readonly wakers = new Map<string, Set<() => void>>();

  /** The registry of `store` in this process. */
  static of(store: object): LocalClaims {
    let registry = LocalClaims.byStore.get(store);
    if (!registry) LocalClaims.byStore.set(store, (registry = new LocalClaims()));
    return registry;
  }

  /** Records a claim held in this process. */
  add(sessionId: string, claim: LocalHolder): void {
    let set = this.claims.get(sessionId);
    if (!set) this.claims.set(sessionId, (set = new Set()));
    set.add(claim);
  }

  /** Forgets a claim (released or lost). */
  remove(sessionId: string, claim: LocalHolder): void {
    const set = this.claims.get(sessionId);
    set?.delete(claim);
    if (set?.size === 0) this.claims.delete(sessionId);
  }

  /** Tells the local holder `holderId` of `sessionId` (if it runs here) that `byId` took the session. */
  interrupt(sessionId: string, holderId: string, byId: string): void {
    for (const claim of [...(this.claims.get(sessionId) ?? [])]) {
      if (claim.invocationId === holderId) claim.interruptedBy(byId);
    }
  }

  /** True when the claim `holderId` of `sessionId` runs here and is running the input with `requestId`. */
  runs(sessionId: string, holderId: string, requestId: string): boolean {
    for (const claim of this.claims.get(sessionId) ?? []) {
      if (claim.invocationId === holderId && claim.runningRequestId === requestId) return true;
    }
    return false;
  }

  /** True when a claim of `sessionId` is held in this process (e.g. a new session not committed yet). */
  holds(sessionId: string): boolean {
    return this.claims.has(sessionId);
  }

  /** Wakes everyone waiting in {@link waitForChange} for `sessionId`. */
  changed(sessionId: string): void {
    const set = this.wakers.get(sessionId);
    this.wakers.delete(sessionId);
    for (const wake of set ?? []) wake();
  }

  /** Resolves after `ms`, on a local change of `sessionId`, or when `signal` aborts (whichever is first). */
  waitForChange(sessionId: string, ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve(); // aborted while the caller was reading or writing the head
    return new Promise((resolve) => {
      let set = this.wakers.get(sessionId);
      if (!set) this.wakers.set(sessionId, (set = new Set()));
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        const waiting = this.wakers.get(sessionId);
        waiting?.delete(done);
        if (waiting?.size === 0) this.wakers.delete(sessionId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }
}
