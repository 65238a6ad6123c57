import { createHmac } from "node:crypto";

/**
 * The Standard Webhooks `webhook-signature` header value: for each key,
 * `v1,` + base64 HMAC-SHA256 of `${id}.${timestamp}.${body}`, space-separated
 * (a receiver accepts the delivery when any one verifies: rotation).
 * `timestamp` is in seconds since the epoch.
 */
export function signWebhook(keys: readonly Buffer[], id: string, timestamp: number, body: string): string {
  return keys
    .map((key) => `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`)
    .join(" ");
}
