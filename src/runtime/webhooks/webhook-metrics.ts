import { metrics, type Counter, type MeterProvider } from "@opentelemetry/api";
import { INSTRUMENTATION_SCOPE } from "../telemetry/telemetry-names.js";

/** Metric names of webhook delivery. */
export const WEBHOOK_METRICS = {
  deliveries: "agentd.webhook.deliveries",
  failures: "agentd.webhook.failures",
  retries: "agentd.webhook.retries",
  lag: "agentd.webhook.outbox.lag",
} as const;

/** The webhook instruments of the global meter provider. */
export interface WebhookInstruments {
  /** Events delivered (a 2xx answer). */
  deliveries: Counter;
  /** Events given up on after the retry period. */
  failures: Counter;
  /** Failed attempts scheduled for a retry. */
  retries: Counter;
}

let cached: { provider: MeterProvider; instruments: WebhookInstruments } | undefined;
let lagSeconds = 0;

/**
 * The instruments (made on first use and again when the global provider
 * changed, as `agentdInstruments`), with the outbox-lag gauge reporting the
 * last value given to {@link reportOutboxLag}.
 */
export function webhookInstruments(): WebhookInstruments {
  const provider = metrics.getMeterProvider();
  if (cached?.provider === provider) return cached.instruments;
  const meter = provider.getMeter(INSTRUMENTATION_SCOPE);
  const instruments: WebhookInstruments = {
    deliveries: meter.createCounter(WEBHOOK_METRICS.deliveries, {
      unit: "{event}",
      description: "Webhook events delivered (a 2xx answer).",
    }),
    failures: meter.createCounter(WEBHOOK_METRICS.failures, {
      unit: "{event}",
      description: "Webhook events never delivered within the retry period.",
    }),
    retries: meter.createCounter(WEBHOOK_METRICS.retries, {
      unit: "{attempt}",
      description: "Failed webhook attempts scheduled for a retry.",
    }),
  };
  meter
    .createObservableGauge(WEBHOOK_METRICS.lag, {
      unit: "s",
      description: "Age of the oldest webhook event not yet delivered (0 when none).",
    })
    .addCallback((result) => result.observe(lagSeconds));
  cached = { provider, instruments };
  return instruments;
}

/** Sets the outbox lag the gauge reports (seconds). */
export function reportOutboxLag(seconds: number): void {
  lagSeconds = seconds;
}
