import type { RecordWebhookMark, SessionHead, SnapshotRecord } from "../../../stores/snapshot-store.js";
import type { WebhookEvent } from "../../../stores/webhook-outbox.js";
import { isTerminalStatus, type FinishReason, type SnapshotStatus } from "../../types/snapshot.js";

/** The event types agentd sends (`type` of the payload). */
export const WEBHOOK_EVENT_TYPES = [
  "invocation.completed",
  "invocation.failed",
  "invocation.aborted",
  "invocation.interrupted",
  "invocation.expired",
  "session.deleted",
  "session.expired",
] as const;

/** The event type of detached work that ended with `status` and `finishReason`. */
export function eventTypeOf(status: SnapshotStatus, finishReason: FinishReason | undefined): string {
  if (status === "completed") return finishReason === "interrupted" ? "invocation.interrupted" : "invocation.completed";
  return `invocation.${status}`;
}

/** The `webhook-id` of the event of row `snapshotId` (a row ends once, so one ID per row). */
export function webhookIdOf(snapshotId: string): string {
  return `msg_${snapshotId}`;
}

/**
 * The mark the write that turns the detached row `existing` into `next`
 * must carry: a new one when it ends the work (a pending row with work
 * turning terminal), the existing one when there is one, else none.
 */
export function markOf<S>(
  existing: SnapshotRecord<S>,
  next: SnapshotRecord<S>,
  now: number,
): RecordWebhookMark | undefined {
  if (existing.webhook) return existing.webhook;
  if (!existing.work || existing.status !== "pending" || !isTerminalStatus(next.status)) return undefined;
  return { id: webhookIdOf(existing.snapshotId), type: eventTypeOf(next.status, next.finishReason), at: now };
}

/**
 * The outbox event of a marked row: the Standard Webhooks payload `{type,
 * timestamp, data}` with the session's agent, tenant and labels (from its
 * head, when it still exists), the row's status, finish reason, error and
 * usage. `url` is where it goes (without credentials or query).
 */
export function webhookEventOf<S>(
  record: SnapshotRecord<S> & { webhook: RecordWebhookMark },
  head: SessionHead | undefined,
  tenant: string,
  url: string,
): WebhookEvent {
  const mark = record.webhook;
  const status = mark.type === "invocation.expired" ? "expired" : record.status;
  const data = {
    agent: head?.agent ?? "",
    session_id: record.sessionId,
    snapshot_id: record.snapshotId,
    status,
    finish_reason: record.finishReason ?? (status === "expired" ? "failed" : ""),
    error: record.error ? { code: record.error.status, message: record.error.message } : null,
    usage: record.usage
      ? {
          input_tokens: record.usage.inputTokens,
          output_tokens: record.usage.outputTokens,
          total_tokens: record.usage.totalTokens,
        }
      : null,
    tenant,
    labels: head?.labels ?? {},
  };
  return {
    id: mark.id,
    type: mark.type,
    tenant,
    agent: data.agent,
    sessionId: record.sessionId,
    snapshotId: record.snapshotId,
    createdAt: mark.at,
    body: JSON.stringify({ type: mark.type, timestamp: new Date(mark.at).toISOString(), data }),
    url,
    state: "pending",
    attempts: 0,
    nextAttemptAt: mark.at,
  };
}

/**
 * The outbox event of deleting the session of `head` (queued just before the
 * deletion; see `WebhookRelay.sessionDeleted`): the payload's `snapshot_id`
 * is the session's head snapshot, `status` is `deleted`, `usage` the
 * session's totals.
 */
export function sessionDeletedEventOf(head: SessionHead, url: string, now: number): WebhookEvent {
  return sessionEndedEventOf(head, "deleted", url, now);
}

/**
 * The outbox event of the session of `head` expiring (queued by the sweep
 * just before it deletes the session): as {@link sessionDeletedEventOf} with
 * type `session.expired` and `status` `expired`; its ID is one per session
 * (`msg_<sessionId>_expired`), so instances sweeping at once queue one event.
 */
export function sessionExpiredEventOf(head: SessionHead, url: string, now: number): WebhookEvent {
  return sessionEndedEventOf(head, "expired", url, now);
}

/** The `session.<end>` event of the session of `head`. */
function sessionEndedEventOf(head: SessionHead, end: "deleted" | "expired", url: string, now: number): WebhookEvent {
  const type = `session.${end}`;
  const data = {
    agent: head.agent,
    session_id: head.sessionId,
    snapshot_id: head.headSnapshotId,
    status: end,
    finish_reason: "",
    error: null,
    usage: head.usage
      ? {
          input_tokens: head.usage.inputTokens,
          output_tokens: head.usage.outputTokens,
          total_tokens: head.usage.totalTokens,
        }
      : null,
    tenant: head.owner,
    labels: head.labels ?? {},
  };
  return {
    id: `msg_${head.sessionId}_${end}`,
    type,
    tenant: head.owner,
    agent: head.agent,
    sessionId: head.sessionId,
    snapshotId: head.headSnapshotId,
    createdAt: now,
    body: JSON.stringify({ type, timestamp: new Date(now).toISOString(), data }),
    url,
    state: "pending",
    attempts: 0,
    // Due a moment after the deletion it precedes; the dispatcher also holds it while the head exists.
    nextAttemptAt: now + 1_000,
  };
}

/** `url` as listed and stored: without credentials, query or fragment. */
export function displayUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}
