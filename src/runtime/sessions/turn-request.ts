import type { AgentInput } from "../../types/agent-io.js";
import { inputFingerprint } from "./request-ledger.js";

/** The idempotency key of a turn's input and the fingerprint that tells a retry from a reused key. */
export interface TurnRequest {
  /** The input's request ID. */
  requestId: string;
  /** `inputFingerprint` of the input. */
  fingerprint: string;
}

/**
 * The turn request of `input`, or undefined when it carries no request ID
 * (nothing is hashed then). `edit`: the invocation's init patches, part of
 * the fingerprint (see `inputFingerprint`).
 */
export function turnRequestOf(input: AgentInput, edit?: object): TurnRequest | undefined {
  const requestId = input.requestId;
  return requestId ? { requestId, fingerprint: inputFingerprint(input, edit) } : undefined;
}
