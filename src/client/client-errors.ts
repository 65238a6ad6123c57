import { Code, ConnectError } from "@connectrpc/connect";
import { AgentError } from "../errors/agent-error.js";
import { codeForStatus } from "../server/error-mapping.js";

/**
 * The response trailer/header in which agentd sends an error's structured
 * details (JSON object), when it has any.
 */
export const ERROR_DETAILS_METADATA_KEY = "agentd-error-details";

/**
 * Every error the agentd client throws or rejects with is a `ConnectError`
 * from `@connectrpc/connect`: compare `err.code` with `Code` (e.g.
 * `Code.NotFound`, `Code.FailedPrecondition`). RPC errors arrive as the
 * server sent them; errors raised locally (a decoding failure, a send after
 * the conversation ended) are converted here so callers handle one type.
 */
export function toClientError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  if (err instanceof AgentError) return new ConnectError(err.message, codeForStatus(err.status), undefined, undefined, err);
  return ConnectError.from(err);
}

/** A locally raised client error with a code and an actionable message. */
export function clientError(code: Code, message: string): ConnectError {
  return new ConnectError(message, code);
}

/**
 * The structured details agentd attached to an RPC error (sent as the
 * `agentd-error-details` metadata entry), or undefined when there are none or
 * they are not a JSON object.
 */
export function errorDetails(err: unknown): Record<string, unknown> | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  const raw = err.metadata.get(ERROR_DETAILS_METADATA_KEY);
  if (!raw) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
