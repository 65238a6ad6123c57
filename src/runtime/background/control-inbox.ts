import { setTimeout as sleep } from "node:timers/promises";
import { uuidv7 } from "../../../stores/uuid-v7.js";
import { AgentError } from "../../errors/agent-error.js";
import type { AgentInput, InputAck } from "../../types/agent-io.js";
import type { PostedControl } from "../../types/detached-work.js";
import type { SessionStore, SnapshotRecord, StoreCallContext } from "../../../stores/snapshot-store.js";
import type { LivenessSettings } from "../sessions/snapshot-liveness.js";

/** The most control inputs a pending row keeps (the oldest are dropped first). */
const MAX_POSTED = 16;
/** How often a poster re-reads the row for its ack. */
const POLL_MS = 100;

/**
 * Posts a control input to detached work running on another instance: it is
 * appended to the pending row's `work.controls` (an ordinary atomic update),
 * where the worker finds it at its next row write (a heartbeat: every
 * `heartbeatIntervalMs`), applies it and writes its ack back. Resolves with
 * that ack. Throws AgentError FAILED_PRECONDITION when the work ended before
 * the input was posted, DEADLINE_EXCEEDED when no ack came within two
 * heartbeats and two seconds (the input stays posted: the worker may still
 * take it).
 */
export async function postControl<S>(
  store: SessionStore<S>,
  snapshotId: string,
  input: AgentInput,
  liveness: LivenessSettings,
  ctx?: StoreCallContext,
): Promise<InputAck> {
  const requestId = input.requestId || uuidv7();
  const posted: PostedControl = { requestId, postedAt: Date.now() };
  if (input.cancel) posted.cancel = true;
  else if (input.message) posted.steer = input.message;
  const saved = await store.updateRecord(
    snapshotId,
    (existing) =>
      existing.status === "pending" && existing.work
        ? {
            ...existing,
            work: { ...existing.work, controls: [...(existing.work.controls ?? []), posted].slice(-MAX_POSTED) },
          }
        : null,
    ctx,
  );
  if (!saved)
    throw new AgentError(
      "FAILED_PRECONDITION",
      `the detached work of snapshot "${snapshotId}" has ended; nothing to cancel or steer`,
    );
  const deadline = Date.now() + 2 * liveness.heartbeatIntervalMs + 2000;
  while (Date.now() < deadline) {
    await sleep(POLL_MS);
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
          const controls = (existing.work.controls ?? []).map((c) =>
            !c.ack && this.acks.has(c.requestId) ? { ...c, ack: this.acks.get(c.requestId)! } : c,
          );
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
