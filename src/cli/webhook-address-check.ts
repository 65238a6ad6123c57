import { lookup } from "node:dns/promises";
import { isPrivateAddress } from "../runtime/webhooks/address-policy.js";
import type { WebhookConfig } from "./webhook-args.js";

/**
 * Refuses, at start, a `--webhook-url` whose host resolves only to private or
 * loopback addresses while `--webhook-allow-private` is off: every delivery
 * would be refused, so the configuration cannot work. A host that does not
 * resolve now is let through (DNS may come later; deliveries are retried).
 */
export async function checkWebhookAddress(config: WebhookConfig): Promise<void> {
  if (config.allowPrivate) return;
  const url = new URL(config.url);
  const addresses = await lookup(url.hostname, { all: true }).catch(() => []);
  if (addresses.length > 0 && addresses.every((a) => isPrivateAddress(a.address)))
    throw new Error(
      `--webhook-url host ${url.hostname} resolves only to private or loopback addresses (${addresses
        .map((a) => a.address)
        .join(", ")}), where agentd never delivers unless --webhook-allow-private is given`,
    );
}
