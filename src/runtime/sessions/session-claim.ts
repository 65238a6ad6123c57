import { AgentError } from "../../errors/agent-error.js";
import type { BusyPolicy } from "../../types/session-state.js";
import { addUsage, type Usage } from "../../types/usage.js";
import type { SessionHead, SnapshotRecord } from "../../../stores/snapshot-store.js";
import { LocalClaims } from "./local-claims.js";
import {
  committedRequest,
  DEFAULT_REQUEST_WINDOW,
  withCommittedRequest,
  type RequestWindow,
} from "./request-ledger.js";
import type { ClaimIdentity } from "./claim-settings.js";
import { movedHead, withoutVersion } from "./session-head-edits.js";
import { busyError, lineFullError, throwIfAborted } from "./busy-session-errors.js";
import { claimConflictPause } from "./claim-backoff.js";
import { commitWithRecheck } from "./commit-recheck.js";
import { holderGone, leaseHolder, type LeaseSelf } from "./lease-holder.js";

export { DEFAULT_CLAIM_SETTINGS } from "./claim-settings.js";
export type { ClaimIdentity, ClaimSettings, NewSessionFields } from "./claim-settings.js";
export { dropLease } from "./session-head-edits.js";

const MAX_CAS_ATTEMPTS = 200;

/** This process under its default name, for claims whose settings name none. */
const DEFAULT_SELF: LeaseSelf = leaseHolder();

/**
 * An invocation's hold on one session: the lease in the session head, taken
 * according to the busy policy, refreshed while the invocation runs, and the
 * compare-and-set commits that move the head. Every head write is conditional
 * on the version read, so a commit made after another invocation took the
 * session (INTERRUPT, or a lease that expired) is refused with ABORTED and
 * never written: no acknowledged turn of the new holder is overwritten, and
 * no turn of the old holder lands half-way. Nothing here lives only in this
 * process: the head is the truth; {@link LocalClaims} only speeds up
 * in-process hand-offs.
 */
export class SessionClaim<S> {
  private head: SessionHead | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private refreshTimer: NodeJS.Timeout | undefined;
  private lostError: AgentError | undefined;
  private released = false;
  private onLost: ((err: AgentError) => void) | undefined;
  /** The request ID of the input whose turn runs now (written into the lease at its next write). */
  runningRequestId: string | undefined;

  constructor(private readonly id: ClaimIdentity<S>) {
    this.runningRequestId = id.requestId;
  }

  /** This process, as its leases name it. */
  private get self(): LeaseSelf {
    return this.id.settings.self ?? DEFAULT_SELF;
  }

  /** The committed request IDs this claim's session remembers. */
  get requestWindow(): RequestWindow {
    return this.id.settings.requestWindow ?? DEFAULT_REQUEST_WINDOW;
  }

  /** The session ID. */
  get sessionId(): string {
    return this.id.sessionId;
  }

  /** The invocation holding the claim. */
  get invocationId(): string {
    return this.id.invocationId;
  }

  /** The head as last read or written by this claim. */
  get currentHead(): SessionHead | undefined {
    return this.head;
  }

  /** Installs the callback told when the session is taken away (the invocation then ends ABORTED). */
  whenLost(listener: (err: AgentError) => void): void {
    this.onLost = listener;
    if (this.lostError) listener(this.lostError);
  }

  /**
   * Takes the lease of an existing session per `policy`: REJECT fails at once
   * with ABORTED naming the running invocation; ENQUEUE waits in FIFO order
   * until the session is free or `signal` aborts; INTERRUPT takes the lease
   * from the running invocation (which ends ABORTED). Resolves to the head
   * read under the new lease.
   */
  async acquire(policy: BusyPolicy, signal?: AbortSignal): Promise<SessionHead> {
    const local = LocalClaims.of(this.id.store);
    let queued = false;
    let conflicts = 0; // lost compare-and-sets: each one pauses a little longer (claim-backoff.ts)
    try {
      for (let attempt = 0; ; attempt++) {
        throwIfAborted(signal, this.id.sessionId);
        const head = await this.readHead();
        const now = Date.now();
        const holder =
          head.lease &&
          head.lease.expiresAt > now &&
          head.lease.invocationId !== this.id.invocationId &&
          !holderGone(head.lease.holder, this.self)
            ? head.lease
            : undefined;
        const waiters = (head.waiters ?? []).filter((w) => w.expiresAt > now);
        const others = waiters.filter((w) => w.invocationId !== this.id.invocationId);
        const mine = waiters.find((w) => w.invocationId === this.id.invocationId);
        const myTurn =
          policy !== "enqueue" || (others.length === 0 ? true : waiters[0]?.invocationId === this.id.invocationId);
        if (!holder && myTurn) {
          if (await this.writeHead(head, { lease: this.freshLease(), waiters: others })) return this.started(local);
          await claimConflictPause(++conflicts);
          continue;
        }
        if (holder && policy === "reject" && !this.retries(head, holder, local)) {
          throw busyError(this.id.sessionId, holder.invocationId);
        }
        if (holder && policy === "interrupt") {
          if (await this.writeHead(head, { lease: this.freshLease(), waiters: others })) {
            local.interrupt(this.id.sessionId, holder.invocationId, this.id.invocationId);
            return this.started(local);
          }
          await claimConflictPause(++conflicts);
          continue;
        }
        // ENQUEUE: join (or stay in) the line, refreshing our entry before it expires.
        if (!mine || mine.expiresAt - now < this.id.settings.leaseTtlMs / 2) {
          if (!mine && others.length >= this.id.settings.maxWaiters) {
            throw lineFullError(this.id.sessionId, others.length, this.id.settings.maxWaiters);
          }
          const entry = { invocationId: this.id.invocationId, expiresAt: now + this.id.settings.leaseTtlMs };
          const line = mine ? waiters.map((w) => (w === mine ? entry : w)) : [...waiters, entry];
          if (!(await this.writeHead(head, { ...(head.lease ? { lease: head.lease } : {}), waiters: line }))) {
            await claimConflictPause(++conflicts);
            continue;
          }
          queued = true;
          if (!holder) continue; // free but not our turn yet: re-check at once
        }
        await local.waitForChange(this.id.sessionId, this.id.settings.pollMs, signal);
      }
    } catch (err) {
      if (queued) await this.leaveLine().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Takes the lease of a session whose detached worker died, from the head
   * as the caller read it: a compare-and-set on that head, so of several
   * instances racing for it exactly one wins. Refused (false) when the head
   * moved since, or its lease is valid, not `deadInvocationId`'s (the
   * dead worker's lease may still be valid: it outlives the heartbeat) and
   * held by a process not known to be dead.
   */
  async takeOver(head: SessionHead, deadInvocationId: string): Promise<boolean> {
    const lease = head.lease;
    if (
      lease &&
      lease.expiresAt > Date.now() &&
      lease.invocationId !== deadInvocationId &&
      !holderGone(lease.holder, this.self)
    )
      return false;
    if (!(await this.writeHead(head, { lease: this.freshLease(), waiters: head.waiters ?? [] }))) return false;
    this.started(LocalClaims.of(this.id.store));
    return true;
  }

  /** Marks the claim held for a session this invocation creates with its first commit. */
  startFresh(): void {
    this.started(LocalClaims.of(this.id.store));
  }

  /**
   * Inserts `record` and moves the head to it (compare-and-set), adding
   * `usage` to the head's running totals. Retries when
   * only bookkeeping changed (a waiter joined); throws ABORTED when the head
   * moved or the lease went to another invocation (nothing is written then).
   * The commit's token (the head's `commitToken`) is the record's snapshot
   * ID, so a store that loses the answer to its write learns from the head
   * whether the turn landed (see `SessionStore.commit`).
   */
  commit(record: SnapshotRecord<S>, usage?: Usage): Promise<SessionHead> {
    return this.serialized(async () => {
      this.throwIfLost();
      for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
        const now = Date.now();
        const known = this.head;
        const totals = addUsage(known?.usage, usage);
        const head: Omit<SessionHead, "version"> = known
          ? movedHead(known, record.snapshotId, now, this.freshLease(), totals)
          : {
              sessionId: this.id.sessionId,
              agent: this.id.agent,
              owner: this.id.owner,
              headSnapshotId: record.snapshotId,
              turnCount: 1,
              createdAt: now,
              updatedAt: now,
              lease: this.freshLease(),
              ...this.id.fresh,
              ...(totals ? { usage: totals } : {}),
            };
        if (record.requestId) {
          const entry = { requestId: record.requestId, snapshotId: record.snapshotId, committedAt: now };
          head.requests = withCommittedRequest(known?.requests, entry, this.requestWindow);
        }
        const stored = await commitWithRecheck(
          this.id.store,
          { expectedVersion: known?.version ?? 0, head, record, token: record.snapshotId },
          this.id.ctx,
        );
        if (stored) {
          this.head = stored;
          return stored;
        }
        if (!known && record.requestId) await this.loseToDuplicate(record.requestId);
        await this.revalidate(known);
      }
      throw new AgentError(
        "ABORTED",
        `session "${this.id.sessionId}": gave up committing after ${MAX_CAS_ATTEMPTS} concurrent head updates; retry the turn`,
      );
    });
  }

  /**
   * Adds `usage` to the head's running totals (a compare-and-set on the
   * current head, retried on conflict; also after the claim was lost, since
   * the tokens were spent). Before {@link release}; never throws.
   */
  async addUsage(usage: Usage): Promise<void> {
    await this.serialized(async () => {
      for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
        const head = this.head ?? (await this.id.store.getHead(this.id.sessionId, this.id.ctx));
        if (!head) return;
        const next: Omit<SessionHead, "version"> = {
          ...withoutVersion(head),
          usage: addUsage(head.usage, usage)!,
          updatedAt: Date.now(),
        };
        const stored = await this.id.store.commit({ expectedVersion: head.version, head: next }, this.id.ctx);
        if (stored) {
          this.head = stored;
          return;
        }
        this.head = await this.id.store.getHead(this.id.sessionId, this.id.ctx);
      }
    }).catch(() => undefined);
  }

  /** Ends the claim: stops refreshing and removes the lease (if still ours). Idempotent; never throws. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.refreshTimer);
    const local = LocalClaims.of(this.id.store);
    local.remove(this.id.sessionId, this);
    await this.serialized(async () => {
      for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS && this.head && !this.lostError; attempt++) {
        const head = this.head;
        if (head.lease?.invocationId !== this.id.invocationId) return;
        if (await this.writeHead(head, { waiters: head.waiters ?? [] }, { keepLease: false })) return;
        const current = await this.id.store.getHead(this.id.sessionId, this.id.ctx);
        if (!current || current.lease?.invocationId !== this.id.invocationId) return;
        this.head = current;
      }
    }).catch(() => undefined);
    local.changed(this.id.sessionId);
  }

  /**
   * Stops refreshing the lease without removing it: it stays in the head,
   * naming this invocation, until it lapses or another instance takes the
   * session over. For detached work cut at shutdown, so that the session is
   * still listed as leased (`SessionStore.listLeasedHeads`) and taken over.
   * Idempotent; a later {@link release} does nothing.
   */
  abandon(): void {
    if (this.released) return;
    this.released = true;
    clearInterval(this.refreshTimer);
    LocalClaims.of(this.id.store).remove(this.id.sessionId, this);
  }

  /** @internal Called by {@link LocalClaims} when an INTERRUPT in this process took the session. */
  interruptedBy(invocationId: string): void {
    this.lose(
      new AgentError(
        "ABORTED",
        `the invocation was interrupted: invocation "${invocationId}" took over session "${this.id.sessionId}" (busy policy INTERRUPT)`,
      ),
    );
  }

  private started(local: LocalClaims): SessionHead {
    local.add(this.id.sessionId, this);
    this.refreshTimer = setInterval(() => void this.refresh(), this.id.settings.refreshMs);
    this.refreshTimer.unref();
    return this.head!;
  }

  private async refresh(): Promise<void> {
    await this.serialized(async () => {
      if (this.released || this.lostError || !this.head) return;
      for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
        const known = this.head;
        if (await this.writeHead(known, { lease: this.freshLease(), waiters: known.waiters ?? [] })) return;
        await this.revalidate(known);
      }
    }).catch(() => undefined);
  }

  /**
   * A new session's first commit lost to a racing call with the same request
   * ID (on another instance: in this one the second call waits for the
   * first). Loses the claim with UNAVAILABLE, nothing written: a retry of the
   * call finds the session and is answered with the committed turn.
   */
  private async loseToDuplicate(requestId: string): Promise<void> {
    const current = await this.id.store.getHead(this.id.sessionId, this.id.ctx);
    if (!committedRequest(current, requestId, this.requestWindow)) return;
    this.lose(
      new AgentError(
        "UNAVAILABLE",
        `session "${this.id.sessionId}" was created meanwhile by a call with the same request ID "${requestId}"; retry the call to get its turn (this attempt wrote nothing)`,
        { details: { sessionId: this.id.sessionId, requestId } },
      ),
    );
    this.throwIfLost();
  }

  /** After a failed CAS: adopts the current head if it is still ours and unmoved, else loses the claim (ABORTED). */
  private async revalidate(known: SessionHead | undefined): Promise<void> {
    const current = await this.id.store.getHead(this.id.sessionId, this.id.ctx);
    if (!known) {
      this.lose(new AgentError("ABORTED", `session "${this.id.sessionId}" was created by another invocation`));
    } else if (!current) {
      this.lose(new AgentError("ABORTED", `session "${this.id.sessionId}" no longer exists`));
    } else if (current.lease?.invocationId !== this.id.invocationId) {
      const by =
        current.lease && current.lease.expiresAt > Date.now() ? ` to invocation "${current.lease.invocationId}"` : "";
      this.lose(
        new AgentError("ABORTED", `the invocation lost session "${this.id.sessionId}"${by}; its turn was not written`),
      );
    } else if (current.headSnapshotId !== known.headSnapshotId) {
      this.lose(
        new AgentError(
          "ABORTED",
          `session "${this.id.sessionId}" moved to snapshot "${current.headSnapshotId}"; the turn was not written`,
        ),
      );
    }
    this.throwIfLost();
    this.head = current;
  }

  private lose(err: AgentError): void {
    if (this.lostError) return;
    this.lostError = err;
    clearInterval(this.refreshTimer);
    LocalClaims.of(this.id.store).remove(this.id.sessionId, this);
    this.onLost?.(err);
  }

  private throwIfLost(): void {
    if (this.lostError) throw this.lostError;
  }

  private async readHead(): Promise<SessionHead> {
    const head = await this.id.store.getHead(this.id.sessionId, this.id.ctx);
    if (!head) throw new AgentError("NOT_FOUND", `session "${this.id.sessionId}" not found`);
    this.head = head;
    return head;
  }

  /** CAS of the head with some fields replaced; true when written (this.head updated). */
  private async writeHead(
    head: SessionHead,
    fields: Partial<Pick<SessionHead, "lease" | "waiters">>,
    options: { keepLease?: boolean } = {},
  ): Promise<boolean> {
    const next: Omit<SessionHead, "version"> = { ...withoutVersion(head), ...fields, updatedAt: Date.now() };
    if (options.keepLease === false) delete next.lease;
    if (next.waiters && next.waiters.length === 0) delete next.waiters;
    const stored = await this.id.store.commit({ expectedVersion: head.version, head: next }, this.id.ctx);
    if (stored) this.head = stored;
    return stored !== undefined;
  }

  private async leaveLine(): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const head = await this.id.store.getHead(this.id.sessionId, this.id.ctx);
      const waiters = head?.waiters ?? [];
      if (!head || !waiters.some((w) => w.invocationId === this.id.invocationId)) return;
      if (
        await this.writeHead(
          head,
          { waiters: waiters.filter((w) => w.invocationId !== this.id.invocationId) },
          { keepLease: head.lease !== undefined },
        )
      )
        return;
    }
  }

  private freshLease(): NonNullable<SessionHead["lease"]> {
    const lease: NonNullable<SessionHead["lease"]> = {
      invocationId: this.id.invocationId,
      expiresAt: Date.now() + this.id.settings.leaseTtlMs,
    };
    if (this.runningRequestId) lease.requestId = this.runningRequestId;
    lease.holder = this.self.holder;
    return lease;
  }

  /**
   * Whether this claim retries what `holder` runs or ran: its first input's
   * request ID is the one the holder is running (its lease says so, or it
   * runs in this process), or one the session already committed. Such a
   * claim waits for the session under REJECT instead of failing busy.
   */
  private retries(head: SessionHead, holder: NonNullable<SessionHead["lease"]>, local: LocalClaims): boolean {
    const requestId = this.id.requestId;
    if (!requestId) return false;
    return (
      holder.requestId === requestId ||
      local.runs(this.id.sessionId, holder.invocationId, requestId) ||
      committedRequest(head, requestId, this.requestWindow) !== undefined
    );
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
