import { Code, ConnectError } from "@connectrpc/connect";
import { AgentError } from "../errors/agent-error.js";
import { codeForStatus } from "../protocol/status-codes.js";

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
  if (err instanceof AgentError)
    return new ConnectError(err.message, codeForStatus(err.status), undefined, undefined, err);
  return ConnectError.from(err);
}

/** Where a transport records that it cannot carry a bidi stream (see {@link markHalfDuplex}). */
const HALF_DUPLEX = Symbol.for("agentd.client.halfDuplexTransport");

/**
 * Marks `transport` as unable to carry the bidi `Chat` (`how`, e.g.
 * "grpc-web over HTTP/1.1"), so `client.chat()` fails at once with a clear
 * error instead of an HTTP 505 or a broken pipe.
 */
export function markHalfDuplex<T extends object>(transport: T, how: string): T {
  Object.defineProperty(transport, HALF_DUPLEX, { value: how, enumerable: false });
  return transport;
}

/** The reason a transport cannot carry the bidi Chat, when {@link markHalfDuplex} marked it. */
export function halfDuplexReason(transport: object): string | undefined {
  return (transport as { [HALF_DUPLEX]?: string })[HALF_DUPLEX];
}

/** The error of a Chat over a transport that cannot carry it. */
export function chatNeedsHttp2(how: string): ConnectError {
  return new ConnectError(
    `Chat needs HTTP/2 (gRPC or Connect over HTTP/2), but this client uses ${how}: create it with { protocol: "grpc" } or { protocol: "connect" } (HTTP/2), or use run()/runStream() per turn with the sessionId`,
    Code.Unimplemented,
  );
}

/**
 * A Chat call's error, with the HTTP-level failures of a transport that
 * cannot stream both ways (HTTP 505 from the server, a broken pipe) restated
 * as {@link chatNeedsHttp2}.
 */
export function chatError(err: unknown): ConnectError {
  const error = toClientError(err);
  if (/\bHTTP 505\b|needs HTTP\/2/.test(error.rawMessage))
    return chatNeedsHttp2("a protocol over HTTP/1.1 (the server answered HTTP 505)");
  if (error.rawMessage === "write EPIPE") {
    return new ConnectError(
      "the server closed the connection while the Chat request was being sent (write EPIPE); over HTTP/1.1 that is how it refuses a Chat, " +
        "which needs HTTP/2 (gRPC or Connect over HTTP/2)",
      error.code,
      undefined,
      undefined,
      error,
    );
  }
  return error;
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
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
