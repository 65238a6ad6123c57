import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  ListWebhookDeliveriesResponseSchema,
  WebhookDeliverySchema,
  WebhookDeliveryState,
  type ListWebhookDeliveriesRequest,
  type ListWebhookDeliveriesResponse,
  type WebhookDelivery,
} from "../../gen/ts/agentd/v1/agent_service_pb.js";
import type { WebhookEvent, WebhookEventState, WebhookOutbox } from "../../stores/webhook-outbox.js";
import { AgentError } from "../errors/agent-error.js";
import type { PageTokens } from "./page-tokens.js";

const STATES: Record<WebhookEventState, WebhookDeliveryState> = {
  pending: WebhookDeliveryState.PENDING,
  delivered: WebhookDeliveryState.DELIVERED,
  failed: WebhookDeliveryState.FAILED,
};

/**
 * ListWebhookDeliveries: the caller's tenant's webhook events, newest first,
 * from `outbox`, page tokens signed for the tenant and the state filter
 * (another tenant's or a changed token: INVALID_ARGUMENT). Without webhooks
 * configured (`outbox` undefined): FAILED_PRECONDITION.
 */
export async function listWebhookDeliveries(
  outbox: WebhookOutbox | undefined,
  request: ListWebhookDeliveriesRequest,
  tenant: string,
  pageTokens: PageTokens,
): Promise<ListWebhookDeliveriesResponse> {
  if (!outbox)
    throw new AgentError(
      "FAILED_PRECONDITION",
      "webhooks are not configured on this server (start it with --webhook-url)",
    );
  if (request.pageSize < 0)
    throw new AgentError("INVALID_ARGUMENT", `page_size must not be negative, got ${request.pageSize}`);
  const state = stateFromWire(request.state);
  const scope = ["webhooks", tenant, state ?? ""];
  const page = await outbox.list({
    tenant,
    ...(state ? { state } : {}),
    ...(request.pageSize ? { pageSize: request.pageSize } : {}),
    ...(request.pageToken ? { pageToken: pageTokens.verify(request.pageToken, scope) } : {}),
  });
  return create(ListWebhookDeliveriesResponseSchema, {
    deliveries: page.events.map(deliveryToWire),
    nextPageToken: page.nextPageToken ? pageTokens.sign(page.nextPageToken, scope) : "",
  });
}

function stateFromWire(state: WebhookDeliveryState): WebhookEventState | undefined {
  switch (state) {
    case WebhookDeliveryState.UNSPECIFIED:
      return undefined;
    case WebhookDeliveryState.PENDING:
      return "pending";
    case WebhookDeliveryState.DELIVERED:
      return "delivered";
    case WebhookDeliveryState.FAILED:
      return "failed";
    default:
      throw new AgentError("INVALID_ARGUMENT", `unknown webhook delivery state ${String(state)}`);
  }
}

/** An outbox event as an `agentd.v1.WebhookDelivery`. */
function deliveryToWire(event: WebhookEvent): WebhookDelivery {
  return create(WebhookDeliverySchema, {
    webhookId: event.id,
    type: event.type,
    agent: event.agent,
    sessionId: event.sessionId,
    snapshotId: event.snapshotId,
    state: STATES[event.state],
    attempts: event.attempts,
    createdAt: timestampFromMs(event.createdAt),
    ...(event.lastAttemptAt !== undefined ? { lastAttemptAt: timestampFromMs(event.lastAttemptAt) } : {}),
    ...(event.state === "pending" ? { nextAttemptAt: timestampFromMs(event.nextAttemptAt) } : {}),
    lastError: event.lastError ?? "",
    url: event.url,
  });
}
