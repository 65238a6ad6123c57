import { APICallError, LoadAPIKeyError, RetryError, StreamProviderError } from "ai";
import { AgentError, type StatusName } from "../errors/agent-error.js";
import { scrubSecrets } from "./secret-scrub.js";

/**
 * The status an HTTP status code from a model provider maps to: 400 →
 * INVALID_ARGUMENT, 401 → UNAUTHENTICATED, 403 → PERMISSION_DENIED, 404 →
 * NOT_FOUND, 408/504 → DEADLINE_EXCEEDED, 409 → ABORTED, 413 →
 * INVALID_ARGUMENT, 429 → RESOURCE_EXHAUSTED, other 5xx → UNAVAILABLE,
 * anything else → UNKNOWN.
 */
export function statusForHttp(code: number): StatusName {
  switch (code) {
    case 400:
    case 413:
    case 422:
      return "INVALID_ARGUMENT";
    case 401:
      return "UNAUTHENTICATED";
    case 403:
      return "PERMISSION_DENIED";
    case 404:
      return "NOT_FOUND";
    case 408:
    case 504:
      return "DEADLINE_EXCEEDED";
    case 409:
      return "ABORTED";
    case 429:
      return "RESOURCE_EXHAUSTED";
  }
  return code >= 500 ? "UNAVAILABLE" : "UNKNOWN";
}

/** The provider's own error message from an error body (OpenAI, Anthropic and Google shapes), if any. */
function bodyMessage(body: string | undefined): string | undefined {
  if (!body) return undefined;
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof parsed.error === "string") return parsed.error;
    if (typeof parsed.error?.message === "string") return parsed.error.message;
    if (typeof parsed.message === "string") return parsed.message;
  } catch {
    // not JSON
  }
  return undefined;
}

/** Google's ErrorInfo reasons that mean the API key was refused (Gemini answers them with HTTP 400). */
const GOOGLE_AUTH_REASONS = new Set(["API_KEY_INVALID"]);

/** True when an error body is Google's way of saying the API key was refused (`error.details[].reason`). */
function refusesApiKey(body: string | undefined): boolean {
  if (!body) return false;
  try {
    const details = (JSON.parse(body) as { error?: { details?: unknown } }).error?.details;
    return (
      Array.isArray(details) &&
      details.some((d) => GOOGLE_AUTH_REASONS.has((d as { reason?: string } | null)?.reason ?? ""))
    );
  } catch {
    return false;
  }
}

/**
 * Turns anything a provider call threw (or streamed as an error) into an
 * AgentError whose status follows {@link statusForHttp}; the message names the
 * model and carries the provider's message, and `details.httpStatus` the code.
 * A refused API key is UNAUTHENTICATED whatever the code (Gemini says HTTP
 * 400 with reason API_KEY_INVALID).
 * Retries that gave up are unwrapped to their last error. An error the
 * provider streamed in the middle of a 200 response (Anthropic's
 * `overloaded_error` event, a Gemini chunk with `error`) maps by the HTTP
 * status the provider package inferred for it, like an HTTP error. Key
 * material in the message (a provider echoing part of the API key) is
 * replaced by `[redacted]` ({@link scrubSecrets}).
 */
export function mapProviderError(err: unknown, model: string): AgentError {
  const mapped = mapUnscrubbed(err, model);
  const message = scrubSecrets(mapped.message);
  if (message === mapped.message && !carriesKeyMaterial(err)) return mapped;
  // The cause (the provider's raw error, which a server fault's log line
  // prints) is dropped with the key material it carries.
  return new AgentError(mapped.status, message, { ...(mapped.details ? { details: mapped.details } : {}) });
}

/**
 * True when the raw error, or an error in its cause chain, holds key material
 * anywhere a log line would print it: message, stack, the provider's response
 * body or the URL.
 */
function carriesKeyMaterial(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    const { responseBody, url } = e as { responseBody?: unknown; url?: unknown };
    for (const text of [e.message, e.stack, responseBody, url])
      if (typeof text === "string" && scrubSecrets(text) !== text) return true;
  }
  return false;
}

function mapUnscrubbed(err: unknown, model: string): AgentError {
  if (err instanceof AgentError) return err;
  if (RetryError.isInstance(err)) return mapUnscrubbed(err.lastError, model);
  if (APICallError.isInstance(err)) {
    if (err.statusCode !== undefined) {
      const detail = bodyMessage(err.responseBody) ?? err.message;
      const status = refusesApiKey(err.responseBody) ? "UNAUTHENTICATED" : statusForHttp(err.statusCode);
      return new AgentError(status, `model "${model}" failed with HTTP ${err.statusCode}: ${detail}`, {
        details: { httpStatus: err.statusCode, model },
        cause: err,
      });
    }
    return new AgentError("UNAVAILABLE", `model "${model}" could not be reached at ${err.url}: ${err.message}`, {
      details: { model },
      cause: err,
    });
  }
  if (StreamProviderError.isInstance(err) && err.statusCode !== undefined) {
    const kind = err.type ? ` (${err.type})` : "";
    return new AgentError(statusForHttp(err.statusCode), `model "${model}" failed mid-stream${kind}: ${err.message}`, {
      details: { httpStatus: err.statusCode, model },
      cause: err,
    });
  }
  if (LoadAPIKeyError.isInstance(err))
    return new AgentError("FAILED_PRECONDITION", `model "${model}": ${err.message}`, { cause: err });
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) {
    return new AgentError(
      err.name === "TimeoutError" ? "DEADLINE_EXCEEDED" : "CANCELLED",
      `model "${model}": ${err.message}`,
      { cause: err },
    );
  }
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error ? (err.cause as { code?: string } | undefined) : undefined;
  if (cause?.code === "ECONNREFUSED" || cause?.code === "ENOTFOUND") {
    return new AgentError("UNAVAILABLE", `model "${model}" could not be reached: ${message}`, { cause: err });
  }
  return new AgentError("UNKNOWN", `model "${model}" failed: ${message}`, { cause: err });
}
