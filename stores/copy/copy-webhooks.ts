import { AgentError } from "../../src/errors/agent-error.js";
import type { WebhookEvent, WebhookOutbox } from "../webhook-outbox.js";
import { canonicalJson } from "./canonical-json.js";

/** What {@link copyWebhookEvents} copied. */
export interface WebhookCopy {
  /** Events of the source's outbox (every state) for the tenants asked for. */
  events: number;
  /** Of those, the ones still pending delivery. */
  pending: number;
  /** Events this call stored in the destination (the others were there already). */
  written: number;
}

/**
 * Copies every event of `tenants` from the source outbox to the destination
 * outbox (FAILED_PRECONDITION at the first event when it is undefined: the
 * destination store keeps none) (`put`, idempotent by ID: a re-run stores only what is missing), then
 * reads each back from the destination and compares it with the source's,
 * field for field (canonical JSON). Events keep their IDs, bodies, state,
 * attempts, next attempt time and lease, so a pending event is delivered by
 * the destination's agentd exactly as it would have been by the source's.
 * Throws DATA_LOSS naming the event and its session when the destination holds
 * an event of that ID with other contents (e.g. delivered since an earlier run).
 */
export async function copyWebhookEvents(
  from: Pick<WebhookOutbox, "list">,
  to: WebhookOutbox | undefined,
  tenants: Iterable<string>,
): Promise<WebhookCopy> {
  const done: WebhookCopy = { events: 0, pending: 0, written: 0 };
  for (const tenant of tenants) {
    let pageToken: string | undefined;
    do {
      const page = await from.list({ tenant, pageSize: 1000, ...(pageToken ? { pageToken } : {}) });
      for (const event of page.events) {
        done.events++;
        if (event.state === "pending") done.pending++;
        if (!to) throw new AgentError("FAILED_PRECONDITION", "the destination store keeps no webhook outbox");
        if (await to.put(event)) done.written++;
        checkCopied(event, await to.get(event.id));
      }
      pageToken = page.nextPageToken;
    } while (pageToken);
  }
  return done;
}

function checkCopied(source: WebhookEvent, copied: WebhookEvent | undefined): void {
  if (copied && canonicalJson(copied) === canonicalJson(source)) return;
  throw new AgentError(
    "DATA_LOSS",
    `webhook event ${source.id} (session ${source.sessionId}): the destination ${copied ? "holds another version of it" : "did not keep it"}`,
  );
}
