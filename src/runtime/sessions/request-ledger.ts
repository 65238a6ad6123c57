import { createHash, hash } from "node:crypto";
import { AgentError } from "../../errors/agent-error.js";
import type { AgentInput } from "../../types/agent-io.js";
import type { CommittedRequest, SessionHead } from "../../../stores/snapshot-store.js";

/**
 * How long a session remembers the request IDs of its committed turns: the
 * most recent `kept` of them, each for at most `ttlMs` after its commit.
 * An input whose request ID has left the window runs again as a new turn.
 */
export interface RequestWindow {
  /**
   * Most request IDs one session remembers (the most recent ones). Default 16:
   * a Chat's input queue (16 by default) dropped at once is still answered in
   * full, and every head write carries at most 16 entries (~100 bytes each).
   */
  kept: number;
  /** How long after its commit a request ID is remembered (ms). Default 24 h. */
  ttlMs: number;
}

/** The default window: the last 16 request IDs of a session, for 24 hours. */
export const DEFAULT_REQUEST_WINDOW: Readonly<RequestWindow> = Object.freeze({ kept: 16, ttlMs: 24 * 3600 * 1000 });

/** Longest request ID (AIP-155 keys are UUIDs: 36 characters). */
export const MAX_REQUEST_ID_CHARS = 64;

const REQUEST_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * `requestId` when it is at most {@link MAX_REQUEST_ID_CHARS} characters of
 * `[A-Za-z0-9_-]` (a UUID is); empty or unset is "none" (undefined).
 * Throws INVALID_ARGUMENT naming `field` otherwise.
 */
export function validRequestId(requestId: string | undefined, field = "input.request_id"): string | undefined {
  if (requestId === undefined || requestId === "") return undefined;
  if (!REQUEST_ID.test(requestId)) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `${field} must be at most ${MAX_REQUEST_ID_CHARS} characters of A-Z, a-z, 0-9, "_" and "-" (a UUID, for example); got ${requestId.length} characters`,
      { details: { field } },
    );
  }
  return requestId;
}

/**
 * SHA-256 (hex) of the input's canonical JSON (object keys sorted) without its
 * request ID: equal for the same input however its keys were ordered, so a
 * retry is told from a different input sent under the same ID. `edit`, the
 * invocation's init patches (a fork from an edited past), is hashed with it:
 * a retry that sends a different patch is a different input. Without an
 * edit the fingerprint is the input's alone.
 */
export function inputFingerprint(input: AgentInput, edit?: object): string {
  // The input's own members without requestId, written in one pass (no copy of the input is made).
  const body = canonicalObject(input as Record<string, unknown>, "requestId");
  const json = edit ? `{"initEdit":${canonicalJson(edit)},"input":${body}}` : body;
  return hash("sha256", json, "hex");
}

/**
 * JSON with every object's keys in sorted order (UTF-16 code unit order) and
 * undefined members left out; an undefined array element is `null`. The
 * stored fingerprints of every earlier version were made from exactly this
 * text, so it must never change.
 */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += (i > 0 ? "," : "") + canonicalJson(value[i]);
    return `${out}]`;
  }
  return canonicalObject(value as Record<string, unknown>);
}

/** {@link canonicalJson} of an object (own enumerable keys, as `Object.keys`), without the member `skip`. */
function canonicalObject(value: Record<string, unknown>, skip?: string): string {
  const keys = Object.keys(value);
  if (keys.length > 1) keys.sort();
  let out = "{";
  for (const key of keys) {
    const member = value[key];
    if (member === undefined || key === skip) continue;
    out += `${out.length > 1 ? "," : ""}${JSON.stringify(key)}:${canonicalJson(member)}`;
  }
  return `${out}}`;
}

/**
 * The committed entry of `requestId` in `head`, if the session remembers it
 * (within `window` at `now`). At most `window.kept` entries are scanned.
 */
export function committedRequest(
  head: SessionHead | undefined,
  requestId: string,
  window: RequestWindow,
  now = Date.now(),
): CommittedRequest | undefined {
  const requests = head?.requests;
  if (!requests) return undefined;
  for (let i = requests.length - 1; i >= 0; i--) {
    const entry = requests[i]!;
    if (entry.requestId === requestId) return entry.committedAt + window.ttlMs > now ? entry : undefined;
  }
  return undefined;
}

/**
 * `requests` with `entry` appended and the entries past `window` dropped (too
 * old, or beyond the most recent `window.kept`). A new array; the argument is
 * left as it is (it may be frozen).
 */
export function withCommittedRequest(
  requests: readonly CommittedRequest[] | undefined,
  entry: CommittedRequest,
  window: RequestWindow,
): CommittedRequest[] {
  const oldest = entry.committedAt - window.ttlMs;
  const kept = (requests ?? []).filter((r) => r.committedAt > oldest && r.requestId !== entry.requestId);
  kept.push(entry);
  return kept.length > window.kept ? kept.slice(kept.length - window.kept) : kept;
}

/**
 * The ID of the session a new-session call whose first input carries
 * `requestId` creates: a UUID (version 8, RFC 9562) made of the SHA-256 of
 * owner, agent and request ID, so a retry of that call names the same
 * session. Distinct owners or agents never share one.
 */
export function requestSessionId(owner: string, agent: string, requestId: string): string {
  const hex = createHash("sha256").update(`agentd.request-session\0${owner}\0${agent}\0${requestId}`).digest("hex");
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** Throws INVALID_ARGUMENT when `window` is not two numbers >= 1. */
export function validateRequestWindow(window: RequestWindow): RequestWindow {
  for (const [name, value] of [
    ["requestWindow.kept", window.kept],
    ["requestWindow.ttlMs", window.ttlMs],
  ] as const) {
    if (!Number.isInteger(value) || value < 1)
      throw new AgentError("INVALID_ARGUMENT", `${name} must be an integer >= 1, got ${value}`);
  }
  return window;
}
