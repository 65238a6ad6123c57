/**
 * A new request ID for an input (AIP-155): a random UUID v4 in canonical
 * lowercase form. The server runs an input with a request ID at most once per
 * session and answers a retry with the committed turn.
 */
export function newRequestId(): string {
  return globalThis.crypto.randomUUID();
}
