/** The webhook configuration (`--webhook-*` flags). */
export interface WebhookSettings {
  /** Where events go (`--webhook-url`, http or https). */
  url: URL;
  /** Signing keys (base64-decoded `whsec_` secrets); every one signs each delivery. */
  keys: readonly Buffer[];
  /** Allow private and loopback addresses (`--webhook-allow-private`; default false). */
  allowPrivate: boolean;
  /** One attempt's timeout (default 10 s). */
  timeoutMs: number;
  /** Retry a failing event for this long after it happened, then mark it failed (default 24 h). */
  retryPeriodMs: number;
  /** Keep delivered and failed events readable this long after they happened (default 7 days). */
  keepMs: number;
  /** First retry's backoff cap; doubles per attempt (default 1 s), capped at {@link maxBackoffMs}. */
  baseBackoffMs: number;
  /** Largest backoff between two attempts (default 1 h). */
  maxBackoffMs: number;
  /** How often the outbox is polled for due events (default 1 s). */
  pollMs: number;
  /**
   * Attempts in flight at once to one endpoint (events with the same URL;
   * default 4): a slow or dead receiver holds at most this many, and its
   * other events wait in the outbox without holding back other endpoints'.
   */
  endpointConcurrency: number;
  /** Attempts in flight at once over every endpoint, per instance (default 64). */
  maxInFlight: number;
}

/** The defaults of {@link WebhookSettings} besides url and keys. */
export const WEBHOOK_DEFAULTS = {
  allowPrivate: false,
  timeoutMs: 10_000,
  retryPeriodMs: 24 * 3600_000,
  keepMs: 7 * 24 * 3600_000,
  baseBackoffMs: 1_000,
  maxBackoffMs: 3600_000,
  pollMs: 1_000,
  endpointConcurrency: 4,
  maxInFlight: 64,
} as const satisfies Omit<WebhookSettings, "url" | "keys">;

/**
 * With webhooks on, how long after a session expires MongoDB's TTL index may
 * remove its head by itself (the store's `ttlGraceMs`): agentd's sweep, which
 * queues `session.expired` before deleting, comes first.
 */
export const WEBHOOK_SESSION_TTL_GRACE_MS = 3600_000;

/**
 * The backoff before attempt `attempts + 1` (exponential with full jitter):
 * uniformly random in [0, min(max, base × 2^(attempts-1))].
 */
export function backoffMs(settings: Pick<WebhookSettings, "baseBackoffMs" | "maxBackoffMs">, attempts: number): number {
  const cap = Math.min(settings.maxBackoffMs, settings.baseBackoffMs * 2 ** Math.max(0, attempts - 1));
  return Math.floor(Math.random() * cap);
}
