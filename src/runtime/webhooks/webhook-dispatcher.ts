import { SpanKind } from "@opentelemetry/api";
import type { WebhookEvent, WebhookOutbox } from "../../../stores/webhook-outbox.js";
import { startPeriodicTask } from "../background/periodic-task.js";
import { agentdTracer } from "../telemetry/telemetry.js";
import { reportOutboxLag, webhookInstruments } from "./webhook-metrics.js";
import type { WebhookEndpoints } from "./webhook-endpoints.js";
import { sendWebhook, type SendOutcome } from "./webhook-sender.js";
import { backoffMs, type WebhookSettings } from "./webhook-settings.js";
import { signWebhook } from "./webhook-signature.js";

/** What the dispatcher reports (for logs; never a secret or a response body). */
export interface DispatchEvents {
  delivered?(event: { id: string; type: string; attempts: number; status: number }): void;
  retrying?(event: { id: string; attempts: number; error: string; nextAttemptAt: number }): void;
  failed?(event: { id: string; type: string; attempts: number; error: string; url: string }): void;
  passFailed?(err: unknown): void;
}

/** How many events one claim takes at most. */
const BATCH = 16;
/** Prune settled events at most this often. */
const PRUNE_EVERY_MS = 10 * 60_000;

/**
 * Delivers the outbox's events: every `pollMs` (and at once when woken, or
 * when an attempt ends) it claims the due events with a lease (so that of
 * the instances sharing the store exactly one delivers each), POSTs each one
 * signed per Standard Webhooks, and records the outcome under its lease:
 * delivered on a 2xx; otherwise retried after an exponential backoff with
 * full jitter, with the same `webhook-id` and body, until `retryPeriodMs`
 * after the event, then marked failed (logged and counted; kept `keepMs` for
 * ListWebhookDeliveries). An instance that dies mid-attempt leaves the lease
 * to lapse: another one (or it, restarted) delivers the event again (at
 * least once).
 *
 * Endpoints are isolated: each attempt runs on its own (no pass waits for a
 * batch), at most `endpointConcurrency` attempts per endpoint (URL) and
 * `maxInFlight` in all are in flight, and a claim skips the endpoints at
 * their limit, so a slow or dead receiver holds only its own deliveries
 * (each cut at `timeoutMs`), never another endpoint's.
 */
export class WebhookDispatcher {
  private stopTask: (() => Promise<void>) | undefined;
  private lastPrune = 0;
  private wakeRequested = false;
  private running: Promise<void> | undefined;
  /** Attempts in flight per endpoint URL. */
  private readonly lanes = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly outbox: WebhookOutbox,
    private readonly settings: WebhookSettings,
    private readonly endpoints: WebhookEndpoints,
    private readonly instance: string,
    private readonly events: DispatchEvents = {},
    private readonly hold: (event: WebhookEvent) => Promise<string | undefined> = async () => undefined,
  ) {}

  /** The lease of a claim: the attempt's timeout plus a margin. */
  get leaseMs(): number {
    return this.settings.timeoutMs + 5_000;
  }

  /** Starts polling (idempotent). */
  start(): void {
    this.stopTask ??= startPeriodicTask(
      () => this.pass(),
      this.settings.pollMs,
      (err) => this.events.passFailed?.(err),
    );
  }

  /** Runs a pass soon (a new event was queued by this process, or an attempt ended). */
  wake(): void {
    if (!this.stopTask) return;
    if (this.running) {
      this.wakeRequested = true;
      return;
    }
    void this.pass().catch((err: unknown) => this.events.passFailed?.(err));
  }

  /** Stops polling and waits for a running pass and the attempts in flight. */
  async stop(): Promise<void> {
    const stop = this.stopTask;
    this.stopTask = undefined;
    await stop?.();
    await this.running?.catch(() => undefined);
    await Promise.all(this.inFlight);
  }

  /**
   * One pass: claim due events of the endpoints with room and start an
   * attempt for each (not waiting for them), prune now and then, report the lag.
   */
  async pass(): Promise<void> {
    if (this.running) return this.running;
    this.running = (async () => {
      do {
        this.wakeRequested = false;
        const room = this.settings.maxInFlight - this.inFlight.size;
        if (room <= 0) break;
        const limit = Math.min(BATCH, room);
        const busy = [...this.lanes].filter(([, n]) => n >= this.settings.endpointConcurrency).map(([url]) => url);
        const claimed = await this.outbox.claim(this.instance, Date.now(), this.leaseMs, limit, { skipUrls: busy });
        for (const event of claimed) {
          if ((this.lanes.get(event.url) ?? 0) < this.settings.endpointConcurrency) this.launch(event);
          else await this.release(event); // one claim brought more of an endpoint's events than it has room for
        }
        if (claimed.length === limit) this.wakeRequested = true;
      } while (this.wakeRequested && this.stopTask);
      const oldest = await this.outbox.oldestPending();
      reportOutboxLag(oldest === undefined ? 0 : Math.max(0, (Date.now() - oldest) / 1000));
      if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) {
        this.lastPrune = Date.now();
        await this.outbox.prune(Date.now() - this.settings.keepMs);
      }
    })();
    try {
      await this.running;
    } finally {
      this.running = undefined;
    }
  }

  /** Starts the attempt of `event` in its endpoint's lane; when it ends, the lane has room again and a pass runs. */
  private launch(event: WebhookEvent): void {
    this.lanes.set(event.url, (this.lanes.get(event.url) ?? 0) + 1);
    const attempt: Promise<void> = this.attempt(event)
      .catch((err: unknown) => this.events.passFailed?.(err))
      .finally(() => {
        const left = (this.lanes.get(event.url) ?? 1) - 1;
        if (left > 0) this.lanes.set(event.url, left);
        else this.lanes.delete(event.url);
        this.inFlight.delete(attempt);
        this.wake();
      });
    this.inFlight.add(attempt);
  }

  /** Gives a claimed event back unchanged (its lease dropped), for a later pass. */
  private async release(event: WebhookEvent): Promise<void> {
    await this.outbox.settle(event.id, this.instance, {
      state: "pending",
      attempts: event.attempts,
      nextAttemptAt: event.nextAttemptAt,
    });
  }

  /** One signed POST of `event` in a span, and its outcome recorded under the lease. */
  private async attempt(event: WebhookEvent): Promise<void> {
    const span = agentdTracer().startSpan("agentd.webhook deliver", {
      kind: SpanKind.CLIENT,
      attributes: {
        "agentd.webhook.id": event.id,
        "agentd.webhook.type": event.type,
        "agentd.webhook.attempt": event.attempts + 1,
        "url.full": event.url,
      },
    });
    try {
      const outcome = await this.post(event);
      if (outcome.ok) span.setAttribute("http.response.status_code", outcome.status);
      else span.setStatus({ code: 2, message: outcome.error });
      await this.record(event, outcome);
    } finally {
      span.end();
    }
  }

  /** One signed POST to the tenant's endpoint as it is now; an endpoint that cannot be resolved fails the attempt. */
  private async post(event: WebhookEvent): Promise<SendOutcome> {
    let endpoint;
    try {
      const held = await this.hold(event);
      if (held) return { ok: false, error: held };
      endpoint = await this.endpoints.resolve(event.tenant);
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      "content-type": "application/json",
      "user-agent": "agentd-webhooks",
      "webhook-id": event.id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signWebhook(endpoint.keys, event.id, timestamp, event.body),
    };
    return sendWebhook(endpoint.url, headers, event.body, this.settings);
  }

  private async record(event: WebhookEvent, outcome: SendOutcome): Promise<void> {
    const now = Date.now();
    const attempts = event.attempts + 1;
    const instruments = webhookInstruments();
    if (outcome.ok) {
      await this.outbox.settle(event.id, this.instance, {
        state: "delivered",
        attempts,
        nextAttemptAt: now,
        lastAttemptAt: now,
      });
      instruments.deliveries.add(1, { "agentd.webhook.type": event.type });
      this.events.delivered?.({ id: event.id, type: event.type, attempts, status: outcome.status });
      return;
    }
    const next = now + backoffMs(this.settings, attempts);
    if (next > event.createdAt + this.settings.retryPeriodMs) {
      await this.outbox.settle(event.id, this.instance, {
        state: "failed",
        attempts,
        nextAttemptAt: now,
        lastAttemptAt: now,
        lastError: outcome.error,
      });
      instruments.failures.add(1, { "agentd.webhook.type": event.type });
      this.events.failed?.({ id: event.id, type: event.type, attempts, error: outcome.error, url: event.url });
      return;
    }
    await this.outbox.settle(event.id, this.instance, {
      state: "pending",
      attempts,
      nextAttemptAt: next,
      lastAttemptAt: now,
      lastError: outcome.error,
    });
    instruments.retries.add(1, { "agentd.webhook.type": event.type });
    this.events.retrying?.({ id: event.id, attempts, error: outcome.error, nextAttemptAt: next });
  }
}
