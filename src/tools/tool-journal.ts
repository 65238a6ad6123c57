import { createHash } from "node:crypto";
import type { Message } from "../types/content.js";

/** Namespace of agentd's tool-call keys (a UUID, as UUID v5 names are hashed under one). */
const TOOL_CALL_NAMESPACE = Buffer.from("7f6b1c52a0e44d4b9c1e52d0a6f1c0de", "hex");

/** What a tool call is identified by across retries, re-runs and takeovers of its turn. */
export interface ToolCallIdentity {
  sessionId: string;
  /** The turn: its input's request ID, or {@link turnIdentity} of the history it starts from. */
  turn: string;
  /** Zero-based index of the tool round in the turn. */
  round: number;
  /** Zero-based index of the call among the round's tool requests (the model's order). */
  call: number;
}

/**
 * The idempotency key of a tool call: a UUID in the v5 form (SHA-1 of a
 * fixed namespace and the call's identity, version and variant bits set),
 * so the same call gets the same key on every re-execution of its turn and
 * any other call another key. Fit for `Idempotency-Key` headers and AIP-155
 * request IDs.
 */
export function toolCallKey(identity: ToolCallIdentity): string {
  const name = JSON.stringify([identity.sessionId, identity.turn, identity.round, identity.call]);
  const hash = createHash("sha1").update(TOOL_CALL_NAMESPACE).update(name).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The turn part of a tool call's identity: `req:<request ID>` when the
 * turn's input has one (a client retry reuses it), else `history:<sha256>`
 * of the history the turn starts from (its messages up to and including the
 * user message that started it), which a retry of the same input over the
 * same history reproduces.
 */
export function turnIdentity(requestId: string | undefined, history: readonly Message[]): string {
  if (requestId) return `req:${requestId}`;
  let end = history.length;
  while (end > 0 && history[end - 1]!.role !== "user") end--;
  const hash = createHash("sha256")
    .update(JSON.stringify(history.slice(0, end)))
    .digest("hex");
  return `history:${hash}`;
}
