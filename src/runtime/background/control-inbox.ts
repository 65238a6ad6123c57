import { setTimeout as sleep } from "node:timers/promises";
import { uuidv7 } from "../../../stores/uuid-v7.js";
import { AgentError } from "../../errors/agent-error.js";
import type { AgentInput, InputAck } from "../../types/agent-io.js";
import type { PostedControl } from "../../types/detached-work.js";
import type { SessionStore, SnapshotRecord, StoreCallContext } from "../../../stores/snapshot-store.js";
import type { LivenessSettings } from "../sessions/snapshot-liveness.js";
import { DEFAULT_INPUT_LIMITS } from "../sessions/input-limits.js";
import { inputBytes } from "../invocations/input-bytes.js";

/** The most control inputs a pending row keeps (the oldest answered ones are dropped first; unanswered ones are never dropped). */
const MAX_POSTED = 16;
/** The poster's first re-read of the row for its ack; each next one waits twice as long, up to {@link MAX_POLL_MS}. */
const FIRST_POLL_MS = 100;
/** The longest wait between two re-reads of the row (about a dozen reads over a default deadline, not one per 100 ms). */
const MAX_POLL_MS = 1000;

/**
 * Posts a control input to detached work running on another instance: it is
 * appended to the pending row's `work.controls` (an ordinary atomic update),
 * where the worker finds it at its next row write (a heartbeat: every
 * `heartbeatIntervalMs`), applies it and writes its ack back. Resolves with
 * that ack. Throws AgentError FAILED_PRECONDITION when the work ended before
 * the input was posted, DEADLINE_EXCEEDED when no ack came within two
 * heartbeats and two seconds (the input stays posted: the worker may still
 * take it), RESOURCE_EXHAUSTED when the row already holds {@link MAX_POSTED}
 * unanswered inputs or their steers' bytes with this one would pass
 * `maxPostedBytes` (nothing is posted then). The ack is awaited by re-reading
 * the row with a doubling interval (100 ms up to 1 s), and the worker drops
 * each answered steer's message from the row.
 */
export async function postControl<S>(
  store: SessionStore<S>,
  snapshotId: string,
  input: AgentInput,
  liveness: LivenessSettings,
  ctx?: StoreCallContext,
  maxPostedBytes: number = DEFAULT_INPUT_LIMITS.maxPostedControlBytes,
): Promise<InputAck> {
  const requestId = input.requestId || uuidv7();
  const posted: PostedControl = { requestId, postedAt: Date.now() };
  if (input.cancel) posted.cancel = true;
  else if (input.message) posted.steer = input.message;
  let refused: AgentError | undefined;
  const saved = await store.updateRecord(
    snapshotId,
    (existing) => {
      refused = undefined;
      if (existing.status !== "pending" || !existing.work) return null;
      const controls = existing.work.controls ?? [];
      refused = postingRefusal(controls, posted, maxPostedBytes);
      if (refused) return null;
      return { ...existing, work: { ...existing.work, controls: withPosted(controls, posted) } };
    },
    ctx,
  );
  if (refused) throw refused;
  if (!saved)
    throw new AgentError(
      "FAILED_PRECONDITION",
      `the detached work of snapshot "${snapshotId}" has ended; nothing to cancel or steer`,
    );
  const deadline = Date.now() + 2 * liveness.heartbeatIntervalMs + 2000;
  let wait = FIRST_POLL_MS;
  while (Date.now() < deadline) {
    await sleep(Math.min(wait, Math.max(0, deadline - Date.now())));
    wait = Math.min(2 * wait, MAX_POLL_MS);
    const row = await store.getRecord(snapshotId, ctx);
    const entry = row?.work?.controls?.find((c) => c.requestId === requestId);
    if (entry?.ack) return entry.ack;
    if (!row || row.status !== "pending")
      return input.cancel ? { requestId, result: "nothing_to_cancel" } : unanswered(snapshotId);
  }
  throw new AgentError(
    "DEADLINE_EXCEEDED",
    `the instance running the detached work of snapshot "${snapshotId}" has not answered the control input "${requestId}" yet; it stays posted and is taken at the work's next heartbeat`,
    { details: { snapshotId, requestId } },
  );
}

/** Why `posted` cannot join `controls` (unanswered count or steer bytes past their bounds), or undefined. */
function postingRefusal(
  controls: readonly PostedControl[],
  posted: PostedControl,
  maxPostedBytes: number,
): AgentError | undefined {
  const open = controls.filter((c) => !c.ack);
  if (open.length >= MAX_POSTED)
    return new AgentError(
      "RESOURCE_EXHAUSTED",
      `${open.length} control inputs already wait for the instance running this detached work (the limit is ${MAX_POSTED}); wait for their acks before sending more`,
      { details: { maxPostedControls: MAX_POSTED } },
    );
  const bytes = (c: PostedControl): number => (c.steer ? inputBytes({ message: c.steer }) : 0);
  const waiting = open.reduce((sum, c) => sum + bytes(c), 0);
  if (waiting + bytes(posted) <= maxPostedBytes) return undefined;
  return new AgentError(
    "RESOURCE_EXHAUSTED",
    `the steers waiting for the instance running this detached work hold ${waiting} bytes; this one would pass the limit of ${maxPostedBytes} bytes (posted steers, fixed): wait for their acks before sending more`,
    { details: { postedControlBytes: waiting, maxPostedControlBytes: maxPostedBytes } },
  );
}

/** `controls` with `posted` appended, dropping the oldest answered entries past {@link MAX_POSTED}. */
function withPosted(controls: readonly PostedControl[], posted: PostedControl): PostedControl[] {
  const list = [...controls, posted];
  let excess = list.length - MAX_POSTED;
  return excess <= 0 ? list : list.filter((c) => !(c.ack && excess-- > 0));
}

function unanswered(snapshotId: string): never {
  throw new AgentError(
    "FAILED_PRECONDITION",
    `the detached work of snapshot "${snapshotId}" ended before it took the steer; send it as a new turn`,
  );
}

/**
 * The worker's side of {@link postControl}: every row the detached run
 * writes is shown to `observe`, which applies the control inputs posted on
 * it that this run has not handled (in order, through `apply`) and writes
 * their acks back on the row. Best effort: an ack that cannot be written is
 * retried at the next row write.
 */
export class ControlInbox<S> {
  /** Handled here, with their acks (until written back). */
  private readonly acks = new Map<string, InputAck>();
  private writing = false;

  constructor(
    private readonly apply: (input: AgentInput) => InputAck,
    private readonly store: SessionStore<S>,
    private readonly snapshotId: string,
    private readonly holds: (row: SnapshotRecord<S>) => boolean,
    private readonly ctx?: StoreCallContext,
  ) {}

  /** Applies the row's new control inputs and writes their acks back. */
  observe(row: SnapshotRecord<S>): void {
    const fresh = (row.work?.controls ?? []).filter((c) => !c.ack && !this.acks.has(c.requestId));
    for (const posted of fresh) {
      const input: AgentInput = posted.cancel
        ? { cancel: true, requestId: posted.requestId }
        : { steer: true, message: posted.steer!, requestId: posted.requestId };
      let ack: InputAck;
      try {
        ack = this.apply(input);
      } catch {
        ack = { requestId: posted.requestId, result: posted.cancel ? "nothing_to_cancel" : "queued" };
      }
      this.acks.set(posted.requestId, { ...ack, requestId: posted.requestId });
    }
    if (fresh.length > 0 || this.unwritten(row)) void this.writeAcks();
  }

  private unwritten(row: SnapshotRecord<S>): boolean {
    return (row.work?.controls ?? []).some((c) => !c.ack && this.acks.has(c.requestId));
  }

  private async writeAcks(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      await this.store.updateRecord(
        this.snapshotId,
        (existing) => {
          if (existing.status !== "pending" || !existing.work || !this.holds(existing)) return null;
          // An answered steer's message is not needed any more: only its ack stays on the row.
          const controls = (existing.work.controls ?? []).map((c) => {
            if (c.ack || !this.acks.has(c.requestId)) return c;
            const { steer: _taken, ...rest } = c;
            return { ...rest, ack: this.acks.get(c.requestId)! };
          });
          return { ...existing, work: { ...existing.work, controls } };
        },
        this.ctx,
      );
    } catch {
      // Retried at the next row write (observe).
    } finally {
      this.writing = false;
    }
  }
}
