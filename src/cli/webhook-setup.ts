import type { Logger } from "pino";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { defaultInstanceId } from "../runtime/background/instance-id.js";
import { readWebhookSecrets } from "../runtime/webhooks/webhook-secrets.js";
import { startWebhooks, type Webhooks } from "../runtime/webhooks/webhooks.js";
import type { WebhookEndpointHook } from "../runtime/webhooks/webhook-endpoints.js";
import type { WebhookConfig } from "./webhook-args.js";

/**
 * Webhooks as `--webhook-*` configure them: reads the secrets (an Error names
 * the file, never a secret), checks the store keeps an outbox, and logs
 * deliveries (event ID, type, attempts, status or error; never a secret or a
 * response body). Delivery starts with `start()`.
 */
export function setUpWebhooks(
  config: WebhookConfig,
  raw: SessionStore,
  served: SessionStore,
  instanceId: string | undefined,
  logger: Logger,
  endpointHook?: WebhookEndpointHook,
): Webhooks {
  const keys = readWebhookSecrets(config.secretFile);
  const log = logger.child({ component: "webhooks" });
  return startWebhooks(
    raw,
    served,
    {
      url: new URL(config.url),
      keys,
      allowPrivate: config.allowPrivate,
      ...(config.timeoutMs !== undefined ? { timeoutMs: config.timeoutMs } : {}),
      ...(config.retryPeriodMs !== undefined ? { retryPeriodMs: config.retryPeriodMs } : {}),
    },
    instanceId ?? defaultInstanceId(),
    {
      queued: (id) => log.debug({ webhookId: id }, "webhook event queued"),
      relayFailed: (id, err) =>
        log.warn({ webhookId: id, err }, "webhook event not queued yet (retried by the takeover pass)"),
      delivered: (e) =>
        log.info({ webhookId: e.id, type: e.type, attempts: e.attempts, status: e.status }, "webhook delivered"),
      retrying: (e) =>
        log.info(
          { webhookId: e.id, attempts: e.attempts, error: e.error, nextAttemptAt: e.nextAttemptAt },
          "webhook attempt failed; retrying",
        ),
      failed: (e) =>
        log.warn(
          { webhookId: e.id, type: e.type, attempts: e.attempts, error: e.error, url: e.url },
          "webhook never delivered: given up after the retry period",
        ),
      passFailed: (err) => log.warn({ err }, "webhook delivery pass failed"),
    },
    endpointHook,
  );
}
