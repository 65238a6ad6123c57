import { uuidv7 } from "../../../stores/uuid-v7.js";
import type { ZodType } from "zod";
import { AgentError } from "../../errors/agent-error.js";
import type { AgentInit, BusyPolicy, SessionState } from "../../types/session-state.js";
import { emptySessionState } from "../../types/session-state.js";
import type { SessionHead, SessionStore, SnapshotRecord, StoreCallContext } from "../../../stores/snapshot-store.js";
import { validateCustomState } from "../agents/custom-state-schema.js";
import { LocalClaims } from "./local-claims.js";
import { committedRequest, DEFAULT_REQUEST_WINDOW, requestSessionId } from "./request-ledger.js";
import { dropLease, SessionClaim, type NewSessionFields, type ClaimSettings } from "./session-claim.js";
import { validateLabels } from "../../../stores/session-labels.js";
import { validateTtl } from "./session-settings.js";
import { headRecord, loadRecordState, ownedHead, ownerOf, resolveRecordRef } from "./session-lookup.js";
import { effectiveStatus, type LivenessSettings } from "./snapshot-liveness.js";
import { chainPosition, type CommittedPoint } from "./turn-record.js";
import type { ClientTransforms } from "../agents/state-transform.js";
import type { InputLimits } from "./input-limits.js";
import { applyInitEdit, initEditOf, type InitEdit } from "./init-edit.js";
import { PROCESS_CPU_SHARE, type CpuShare } from "./cpu-share.js";

/** Where an invocation starts: the state, the snapshot it continues, and its hold on the session. */
export interface ResolvedStart<S> {
  state: SessionState<S> & { sessionId: string };
  /** The snapshot this invocation continues (server-managed resume). */
  parent?: CommittedPoint<S>;
  /** Index the first turn of this invocation gets. */
  nextTurnIndex: number;
  /** The session lease (server-managed agents); released when the invocation ends. */
  claim?: SessionClaim<S>;
  /**
   * Set instead of a claim when the call retries a detach the session
   * committed (its first input's request ID is on this detached-work row):
   * the call answers that row (see `DetachAnswer`) and runs nothing.
   */
  detached?: SnapshotRecord<S>;
  /**
   * The edit `state` was made with (init's state / messages patch on the
   * parent's state): the first snapshot written notes it, and it is part of
   * every input's request fingerprint.
   */
  edit?: InitEdit;
}

/** What init resolution needs to know about the agent. */
export interface InitTarget<S> {
  name: string;
  store?: SessionStore<S>;
  stateSchema?: ZodType<S>;
  liveness: LivenessSettings;
  /** Busy policy when the call sets none. */
  busyPolicy: BusyPolicy;
  claims: ClaimSettings;
  /** Idle time-to-live of new sessions when the call sets none (`--session-ttl`). */
  sessionTtlMs?: number;
  /** The agent's client transforms: with a state transform, init patches are refused. */
  transforms: ClientTransforms<S>;
  /** Bounds on init's state and messages patches (default `DEFAULT_INPUT_LIMITS`). */
  inputs?: InputLimits;
  /** Where a fork's edit waits for its tenant's turn (default {@link PROCESS_CPU_SHARE}). */
  cpu?: CpuShare;
}

/** Per-call inputs of init resolution. */
export interface InitCall {
  ctx?: StoreCallContext;
  /** Bounds an ENQUEUE wait (the call's deadline / cancellation). */
  signal?: AbortSignal;
  /** ID of the invocation being started (the lease holder). */
  invocationId: string;
  /** The (valid) request ID of the invocation's first input, if any (see `InvocationOptions.requestId`). */
  requestId?: string;
}

/**
 * Validates `init` against the agent's state management (server-managed
 * agents take IDs, client-managed agents take state), takes the session per
 * the busy policy and loads the resume point (a session's head or a named
 * snapshot, which must be completed). Resuming by
 * session skips an expired, failed or aborted head back to its nearest
 * completed ancestor. Throws
 * AgentError: INVALID_ARGUMENT for state combined with IDs, a session/snapshot
 * mismatch, custom state failing the schema, or a state / messages patch
 * that does not apply (see `applyInitEdit`); FAILED_PRECONDITION for a mode
 * mismatch, a patch the agent cannot take, or a non-completed resume point; NOT_FOUND for an unknown session
 * or snapshot, or one of another agent or owner; ABORTED for a busy session
 * under REJECT; DEADLINE_EXCEEDED when an ENQUEUE wait outlives the call.
 */
export async function resolveInit<S>(
  agent: InitTarget<S>,
  init: AgentInit<S>,
  call: InitCall,
): Promise<ResolvedStart<S>> {
  const sessionId = init.sessionId || undefined;
  const snapshotId = init.snapshotId || undefined;
  if (init.state && (sessionId || snapshotId)) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      "init: state cannot be combined with session_id or snapshot_id; send one conversation source",
    );
  }
  const edit = initEditOf(
    {
      name: agent.name,
      serverManaged: agent.store !== undefined,
      stateTransformed: agent.transforms.state !== undefined,
    },
    init,
    agent.inputs,
  );
  const store = agent.store;
  if (!store) {
    if (sessionId || snapshotId) {
      throw new AgentError(
        "FAILED_PRECONDITION",
        `agent "${agent.name}" is client-managed (it has no store): send the state from the previous output instead of session_id/snapshot_id`,
      );
    }
    return { state: clientState(agent, init.state), nextTurnIndex: countUserTurns(init.state) };
  }
  if (init.state) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `agent "${agent.name}" keeps conversation state on the server: resume with session_id or snapshot_id instead of sending state`,
    );
  }
  const policy = init.busyPolicy ?? agent.busyPolicy;
  let resumed = sessionId;
  if (!sessionId && !snapshotId) {
    if (!call.requestId) return freshStart(agent, store, init, call, uuidv7());
    const retried = await requestSession(agent, store, call.requestId, call, (id) =>
      freshStart(agent, store, init, call, id),
    );
    if ("start" in retried) return retried.start;
    resumed = retried.sessionId;
  }
  if (snapshotId) {
    // A branch point is fixed by its ID: check it before waiting for the session.
    const { record } = await resolveRecordRef(store, agent.name, { snapshotId, sessionId }, call.ctx);
    assertResumable(agent, record);
    const claim = newClaim(agent, store, record.sessionId, call);
    await claim.acquire(policy, call.signal);
    return startedOrReleased(claim, () => started(agent, store, record, claim, call, edit));
  }
  const current = await ownedHead(store, agent.name, resumed!, call.ctx);
  const detached = call.requestId ? await committedDetach(agent, store, current, call.requestId, call.ctx) : undefined;
  if (detached) {
    return {
      state: { ...emptySessionState<S>(), sessionId: resumed! },
      nextTurnIndex: 0,
      detached,
      ...(edit ? { edit } : {}),
    };
  }
  if (policy === "interrupt") await refuseInterruptingBackgroundWork(agent, store, current.headSnapshotId, call.ctx);
  await voidLeaseOfDeadWorker(agent, store, current, call.ctx);
  const claim = newClaim(agent, store, resumed!, call);
  const head = await claim.acquire(policy, call.signal);
  return startedOrReleased(claim, async () => {
    const from = await lastCompleted(agent, store, await headRecord(store, head, call.ctx), call.ctx);
    assertResumable(agent, from);
    return started(agent, store, from, claim, call, edit);
  });
}

/**
 * The detached-work row the session committed `requestId` on, if it did (a
 * retried detach), read only when the head lists the request ID.
 */
async function committedDetach<S>(
  agent: InitTarget<S>,
  store: SessionStore<S>,
  head: SessionHead,
  requestId: string,
  ctx?: StoreCallContext,
): Promise<SnapshotRecord<S> | undefined> {
  const entry = committedRequest(head, requestId, agent.claims.requestWindow ?? DEFAULT_REQUEST_WINDOW);
  if (!entry) return undefined;
  const row = await store.getRecord(entry.snapshotId, ctx);
  return row?.work !== undefined && row.sessionId === head.sessionId ? row : undefined;
}

/** A new session's start: its claim (labels and time-to-live from `init`), held from now, and an empty state. */
function freshStart<S>(
  agent: InitTarget<S>,
  store: SessionStore<S>,
  init: AgentInit<S>,
  call: InitCall,
  fresh: string,
): ResolvedStart<S> {
  const ttlMs = init.ttlMs ?? agent.sessionTtlMs;
  const claim = newClaim(agent, store, fresh, call, {
    ...(init.labels && Object.keys(init.labels).length > 0 ? { labels: validateLabels(init.labels) } : {}),
    ...(ttlMs !== undefined ? { ttlMs: validateTtl(ttlMs) } : {}),
  });
  claim.startFresh();
  return { state: { ...emptySessionState<S>(), sessionId: fresh }, nextTurnIndex: 0, claim };
}

/**
 * The session a new-session call whose first input carries `requestId`
 * starts: its ID is derived from owner, agent and request ID
 * (`requestSessionId`), so a retry of the call resolves to the session the
 * first attempt created: `{ sessionId }` when that session has a head (the
 * retry resumes it, and its turn is answered from the ledger), else the start
 * `fresh` makes of it. While another invocation of this process holds the
 * derived session before its first commit (a racing duplicate), waits for it
 * to commit or give up. `fresh` runs in the same synchronous step as the check
 * that no invocation of this process holds the session, so of two racing
 * duplicates exactly one starts it and the other waits (two reads of the
 * head may resolve in one tick: a check followed by an await would let both
 * through, and the loser's commit would fail UNAVAILABLE).
 */
async function requestSession<S>(
  agent: InitTarget<S>,
  store: SessionStore<S>,
  requestId: string,
  call: InitCall,
  fresh: (sessionId: string) => ResolvedStart<S>,
): Promise<{ sessionId: string } | { start: ResolvedStart<S> }> {
  const sessionId = requestSessionId(ownerOf(call.ctx), agent.name, requestId);
  const local = LocalClaims.of(store);
  for (;;) {
    if (await store.getHead(sessionId, call.ctx)) return { sessionId };
    if (!local.holds(sessionId)) return { start: fresh(sessionId) };
    if (call.signal?.aborted) {
      throw new AgentError("CANCELLED", `the call ended while waiting for session "${sessionId}" to be created`);
    }
    await local.waitForChange(sessionId, agent.claims.pollMs, call.signal);
  }
}

/** Statuses of a head that resume-by-session steps over (the work behind them is over and left no state). */
const SKIPPED_HEAD_STATUSES: ReadonlySet<string> = new Set(["expired", "failed", "aborted"]);

/**
 * Resume by session: when the head is an expired (its detached worker died),
 * failed or aborted snapshot, the nearest completed ancestor (following
 * `parentId`); the new turn builds on it and the head moves past the dead
 * one. Any other head (completed, or still pending) is returned as it is.
 * When no completed ancestor exists the head itself is returned (and refused
 * by {@link assertResumable}).
 */
async function lastCompleted<S>(
  agent: InitTarget<S>,
  store: SessionStore<S>,
  head: SnapshotRecord<S>,
  ctx?: StoreCallContext,
): Promise<SnapshotRecord<S>> {
  let record = head;
  for (let hops = 0; SKIPPED_HEAD_STATUSES.has(effectiveStatus(record, agent.liveness)); hops++) {
    if (!record.parentId || hops > 10_000) return head;
    const parent = await store.getRecord(record.parentId, ctx);
    if (!parent || parent.sessionId !== head.sessionId) return head;
    record = parent;
  }
  return effectiveStatus(record, agent.liveness) === "completed" ? record : head;
}

/**
 * A detached worker holds its session's lease until it finishes; when its
 * process dies the lease would block the session until it runs out
 * (`claims.leaseTtlMs`, 15 s) although its pending head already reads
 * `expired`. This drops such a lease at once. The lease is judged the dead
 * worker's when it was last refreshed no later than
 * `heartbeatAt + min(heartbeatTtlMs, leaseTtlMs - refreshMs)`: the worker
 * refreshed it before it died, while any later holder can only have taken it
 * after the record expired (INTERRUPT is refused on pending detached work) or
 * after the worker's lease ran out, i.e. at least `leaseTtlMs - refreshMs`
 * after its last heartbeat. A compare-and-set: a head that moved meanwhile is
 * left alone.
 */
async function voidLeaseOfDeadWorker<S>(
  agent: InitTarget<S>,
  store: SessionStore<S>,
  head: SessionHead,
  ctx?: StoreCallContext,
): Promise<void> {
  const lease = head.lease;
  const now = Date.now();
  if (!lease || lease.expiresAt <= now) return;
  const record = await store.getRecord(head.headSnapshotId, ctx);
  if (!record || effectiveStatus(record, agent.liveness, now) !== "expired") return;
  const lastSign = record.heartbeatAt ?? record.updatedAt;
  const leaseRefreshedAt = lease.expiresAt - agent.claims.leaseTtlMs;
  const window = Math.min(agent.liveness.heartbeatTtlMs, agent.claims.leaseTtlMs - agent.claims.refreshMs);
  if (leaseRefreshedAt > lastSign + window) return;
  await dropLease(store, head, now, ctx).catch(() => undefined);
}

/** Runs `fn` under a freshly acquired claim, releasing the claim when it throws. */
async function startedOrReleased<S>(
  claim: SessionClaim<S>,
  fn: () => Promise<ResolvedStart<S>>,
): Promise<ResolvedStart<S>> {
  try {
    return await fn();
  } catch (err) {
    await claim.release();
    throw err;
  }
}

/**
 * INTERRUPT stops an attached invocation, not detached work: that has its own
 * Abort RPC, and taking its session would leave the session's head pending.
 */
async function refuseInterruptingBackgroundWork<S>(
  agent: InitTarget<S>,
  store: SessionStore<S>,
  headId: string,
  ctx?: StoreCallContext,
): Promise<void> {
  const head = await store.getRecord(headId, ctx);
  if (head && effectiveStatus(head, agent.liveness) === "pending") {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `session "${head.sessionId}" is running detached work (snapshot "${headId}" is pending): Abort that snapshot first, or wait for it with busy_policy ENQUEUE`,
    );
  }
}

function newClaim<S>(
  agent: InitTarget<S>,
  store: SessionStore<S>,
  sessionId: string,
  call: InitCall,
  fresh?: NewSessionFields,
): SessionClaim<S> {
  return new SessionClaim({
    store,
    sessionId,
    agent: agent.name,
    owner: ownerOf(call.ctx),
    invocationId: call.invocationId,
    ...(call.ctx ? { ctx: call.ctx } : {}),
    settings: agent.claims,
    ...(fresh ? { fresh } : {}),
    ...(call.requestId ? { requestId: call.requestId } : {}),
  });
}

function assertResumable<S>(agent: InitTarget<S>, record: SnapshotRecord<S>): void {
  const status = effectiveStatus(record, agent.liveness);
  if (status === "completed") return;
  const hint = record.parentId ? ` (its parent is "${record.parentId}")` : "";
  throw new AgentError(
    "FAILED_PRECONDITION",
    `snapshot "${record.snapshotId}" is ${status}: only completed snapshots can be resumed; resume from an earlier snapshot${hint}`,
  );
}

/**
 * The start from `record`: its state (with `edit` applied, when set) and the
 * record as the parent. The edit is CPU-heavy work of the caller's tenant:
 * it waits for its turn in `agent.cpu` (default the process's {@link CpuShare}).
 */
async function started<S>(
  agent: InitTarget<S>,
  store: SessionStore<S>,
  record: SnapshotRecord<S>,
  claim: SessionClaim<S>,
  call: InitCall,
  edit?: InitEdit,
): Promise<ResolvedStart<S>> {
  const ctx = call.ctx;
  const loaded = (await loadRecordState(store, record, ctx)) ?? emptySessionState<S>();
  const state = { ...loaded, sessionId: record.sessionId };
  const parent: CommittedPoint<S> = {
    snapshotId: record.snapshotId,
    createdAt: record.createdAt,
    state,
    position: chainPosition(record),
  };
  const nextTurnIndex = record.turnIndex + 1;
  if (!edit) return { state, parent, nextTurnIndex, claim };
  const cpu = agent.cpu ?? PROCESS_CPU_SHARE;
  const applied = await cpu.run(
    ownerOf(ctx),
    () => applyInitEdit(state, edit, agent.stateSchema, agent.inputs),
    call.signal,
  );
  const edited = { ...applied, sessionId: record.sessionId };
  return { state: edited, parent, nextTurnIndex, claim, edit };
}

function clientState<S>(
  agent: InitTarget<S>,
  state: SessionState<S> | undefined,
): SessionState<S> & { sessionId: string } {
  const sessionId = state?.sessionId || uuidv7();
  const custom =
    state?.custom !== undefined && agent.stateSchema
      ? validateCustomState(agent.stateSchema, state.custom, "init.state.custom")
      : state?.custom;
  return {
    sessionId,
    messages: state?.messages ?? [],
    artifacts: state?.artifacts ?? [],
    ...(custom !== undefined ? { custom } : {}),
  };
}

function countUserTurns(state: SessionState<unknown> | undefined): number {
  return (state?.messages ?? []).filter((m) => m.role === "user").length;
}
