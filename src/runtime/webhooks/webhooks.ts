import { AgentError } from "../../errors/agent-error.js";
import type { SessionStore } from "../../../stores/snapshot-store.js";
import { hasWebhookOutbox, type WebhookEvent, type WebhookOutbox } from "../../../stores/webhook-outbox.js";
import type { SettledHook } from "../background/work-takeover.js";
import { WebhookDispatcher, type DispatchEvents } from "./webhook-dispatcher.js";
import { displayUrl } from "./webhook-event.js";
import { WebhookEndpoints, type WebhookEndpointHook } from "./webhook-endpoints.js";
import { WEBHOOK_DEFAULTS, type WebhookSettings } from "./webhook-settings.js";
import { WebhookRelay, webhookStore, type RelayEvents } from "./webhook-store.js";

/** Webhook delivery as `agentd serve` runs it (see {@link startWebhooks}). */
export interface Webhooks {
  /** The store to give the registry: its `updateRecord` marks and relays ended work. */
  store: SessionStore;
  /** The outbox (ListWebhookDeliveries reads it). */
  outbox: WebhookOutbox;
  /** The takeover pass's hook: relays the events of workers that died after ending their work. */
  settled: SettledHook;
  /** Starts delivering. */
  start(): void;
  /** Stops delivering and waits for running attempts. */
  stop(): Promise<void>;
}

/**
 * Sets up webhooks on `store` (`raw` is the store itself, `store` the one
 * the registry uses, e.g. traced): fails FAILED_PRECONDITION when the store
 * keeps no webhook outbox. Settings not given take {@link WEBHOOK_DEFAULTS}.
 * `endpointHook` (an agents module's `webhookEndpoint`) names tenants' own
 * endpoints; the others' events go to `settings.url`.
 */
export function startWebhooks(
  raw: SessionStore,
  store: SessionStore,
  settings: Pick<WebhookSettings, "url" | "keys"> & Partial<WebhookSettings>,
  instance: string,
  events: DispatchEvents & RelayEvents = {},
  endpointHook?: WebhookEndpointHook,
): Webhooks {
  if (!hasWebhookOutbox(raw))
    throw new AgentError(
      "FAILED_PRECONDITION",
      "--webhook-url needs a store with a webhook outbox (memory:, sqlite:, postgres:// and mongodb:// have one); this store has none",
    );
  const full: WebhookSettings = { ...WEBHOOK_DEFAULTS, ...settings };
  const outbox = raw.webhookOutbox();
  const endpoints = new WebhookEndpoints(
    { url: full.url, display: displayUrl(full.url), keys: full.keys },
    endpointHook,
  );
  // A session.deleted or session.expired event waits until its session's head is gone (the deletion it precedes completed).
  const hold = async (event: WebhookEvent): Promise<string | undefined> =>
    (event.type === "session.deleted" || event.type === "session.expired") &&
    (await raw.getHead(event.sessionId, { tenant: event.tenant }))
      ? "held: the session still exists (its deletion has not completed)"
      : undefined;
  const dispatcher = new WebhookDispatcher(outbox, full, endpoints, instance, events, hold);
  const relay = new WebhookRelay(outbox, endpoints, events, () => dispatcher.wake());
  return {
    store: webhookStore(store, relay),
    outbox,
    settled: (s, head, row, liveness) => relay.settled(s, head, row, liveness),
    start: () => dispatcher.start(),
    stop: () => dispatcher.stop(),
  };
}
