import type { PeerCertificate } from "node:tls";
import { createContextKey, type ContextValues, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { AgentError } from "../../errors/agent-error.js";
import { ANONYMOUS, type Principal } from "../../types/principal.js";
import { annotateCall } from "../call-log.js";
import { toConnectError } from "../error-mapping.js";
import type { Authenticate } from "./authenticator.js";
import { credentialCheck, credentialCheckKey } from "./credential-recheck.js";
import { DEFAULT_STREAM_RECHECK_MS, recheckWhileOpen } from "./stream-recheck.js";
import { hostOfAuthority, isLoopbackHost } from "./loopback.js";

/** What the connection told us about a call, captured from the Node request before connect-es sees it. */
export interface ConnectionInfo {
  /** HTTP/1.1 `Host` or HTTP/2 `:authority`. */
  authority?: string;
  /** The verified client certificate of a mutual-TLS connection. */
  peerCertificate?: PeerCertificate;
}

/** Context key of the call's {@link ConnectionInfo} (set per request by the server). */
export const connectionInfoKey = createContextKey<ConnectionInfo>({}, { description: "agentd connection info" });

/** Context key of the call's principal: {@link ANONYMOUS} until the call guard authenticates it. */
export const principalKey = createContextKey<Principal>(ANONYMOUS, { description: "agentd principal" });

/** The principal a handler acts for. */
export function principalOf(ctx: { values: ContextValues }): Principal {
  return ctx.values.get(principalKey);
}

/** Who may call what; see {@link callGuardInterceptor}. */
export interface CallGuardOptions {
  /** Authenticates calls; undefined = no authentication (every call is {@link ANONYMOUS}). */
  authenticate?: Authenticate;
  /** Whether server reflection needs credentials like the agent service; default "open". */
  reflection?: "open" | "authenticated";
  /** Refuse calls whose Host/`:authority` is not a loopback name (DNS rebinding defence of a loopback server without authentication). */
  loopbackHostsOnly?: boolean;
  /**
   * The generation of the accepted credentials, bumped when they change (a
   * tokens file reloaded on SIGHUP): a long-lived call authenticated under an
   * older generation is re-authenticated at its next input. Default: never changes.
   */
  credentialsGeneration?: () => number;
  /**
   * How often the credential of an open streaming call (AttachInvocation,
   * RunStream, WatchSnapshot, Chat) is re-checked, even while nothing
   * streams: a revoked or expired one ends the stream UNAUTHENTICATED within
   * this many ms. Default {@link DEFAULT_STREAM_RECHECK_MS} (`agentd serve`:
   * `--heartbeat-interval-ms`).
   */
  streamRecheckMs?: number;
}

const HEALTH_PREFIX = "/grpc.health.v1.Health/";
const REFLECTION_PREFIX = "/grpc.reflection.";

/** Context key set once {@link admitCall} admitted the call, so a later guard does not check it twice. */
const admittedKey = createContextKey<boolean>(false, { description: "agentd call admitted" });

/**
 * Decides who a call acts for before its handler runs:
 * - with `loopbackHostsOnly`, a call (other than a health check) whose Host
 *   is not a loopback name fails PERMISSION_DENIED (a browser page reaching
 *   a loopback server through a rebound DNS name);
 * - health checks are always open, reflection unless configured otherwise;
 *   an open call that carries credentials the authenticators accept acts for
 *   their principal (it counts as its tenant's), one whose credentials are
 *   not accepted is served as one without;
 * - every other call must authenticate: no or unknown credentials →
 *   UNAUTHENTICATED (the message never repeats a credential).
 * The principal is stored under {@link principalKey} and its subject and
 * tenant go on the call's log line; a `streaming` call also gets a
 * {@link credentialCheckKey} re-check (revocation, expiry) for its later
 * inputs. Only the procedure, headers and connection are read, never the
 * body. Throws the AgentError a refused call ends with.
 */
export async function admitCall(
  options: CallGuardOptions,
  procedure: string,
  headers: Headers,
  values: ContextValues,
  streaming: boolean,
): Promise<void> {
  const { authenticate, loopbackHostsOnly = false, reflection = "open" } = options;
  const currentGeneration = options.credentialsGeneration ?? (() => 0);
  const connection = values.get(connectionInfoKey);
  const health = procedure.startsWith(HEALTH_PREFIX);
  if (loopbackHostsOnly && !health && connection.authority !== undefined) {
    const host = hostOfAuthority(connection.authority);
    if (!isLoopbackHost(host)) {
      throw new AgentError(
        "PERMISSION_DENIED",
        `Host "${host.slice(0, 100)}" is not a loopback name: agentd without authentication only serves calls addressed to localhost (configure authentication to serve other names)`,
      );
    }
  }
  const open = health || (reflection === "open" && procedure.startsWith(REFLECTION_PREFIX));
  const hasCredentials = headers.has("authorization") || connection.peerCertificate !== undefined;
  if (authenticate !== undefined && (!open || hasCredentials)) {
    const generation = currentGeneration();
    let principal: Principal;
    try {
      principal = await runAuthenticate(authenticate, procedure, headers, connection.peerCertificate);
    } catch (err) {
      // An open procedure with credentials that do not hold is served as one without.
      if (open) return void values.set(admittedKey, true);
      throw err;
    }
    values.set(principalKey, principal);
    if (streaming) {
      const reauthenticate = () => runAuthenticate(authenticate, procedure, headers, connection.peerCertificate);
      values.set(credentialCheckKey, credentialCheck({ principal, generation, currentGeneration, reauthenticate }));
    }
    annotateCall({ values }, { subject: principal.subject, tenant: principal.tenant });
  }
  values.set(admittedKey, true);
}

/**
 * {@link admitCall} as a connect-es request gate: it runs from the request
 * headers before the body is received, read or decoded, so an unauthenticated
 * caller costs no body work. A refused call ends with the AgentError's code
 * and message (as a ConnectError).
 */
export function callGuardGate(options: CallGuardOptions): (context: HandlerContext) => Promise<void> {
  return async (context) => {
    const procedure = `/${context.service.typeName}/${context.method.name}`;
    try {
      const streaming = context.method.methodKind !== "unary";
      await admitCall(options, procedure, context.requestHeader, context.values, streaming);
    } catch (err) {
      throw toConnectError(err);
    }
  };
}

/**
 * {@link admitCall} as an interceptor, for routers without
 * {@link callGuardGate}: a call the gate already admitted passes straight on.
 * The responses of an authenticated streaming call re-check its credential
 * every `streamRecheckMs` while open (see {@link recheckWhileOpen}).
 */
export function callGuardInterceptor(options: CallGuardOptions): Interceptor {
  const recheckMs = options.streamRecheckMs ?? DEFAULT_STREAM_RECHECK_MS;
  return (next) => async (req) => {
    if (!req.contextValues.get(admittedKey)) {
      await admitCall(
        options,
        `/${req.service.typeName}/${req.method.name}`,
        req.header,
        req.contextValues,
        req.stream,
      );
    }
    const res = await next(req);
    const check = req.contextValues.get(credentialCheckKey);
    return res.stream && check ? { ...res, message: recheckWhileOpen(res.message, check, recheckMs) } : res;
  };
}

async function runAuthenticate(
  authenticate: Authenticate,
  procedure: string,
  headers: Headers,
  peerCertificate: PeerCertificate | undefined,
): Promise<Principal> {
  let principal: Principal | null;
  try {
    principal = await authenticate({ procedure, headers, ...(peerCertificate ? { peerCertificate } : {}) });
  } catch (err) {
    if (err instanceof AgentError) throw err;
    throw new AgentError("UNAUTHENTICATED", "the credentials could not be verified");
  }
  if (!principal) {
    const hasToken = headers.has("authorization");
    throw new AgentError(
      "UNAUTHENTICATED",
      hasToken
        ? "the credentials were not accepted"
        : "credentials are required: send `authorization: Bearer <token>` (or a client certificate)",
    );
  }
  if (typeof principal.tenant !== "string" || typeof principal.subject !== "string") {
    throw new AgentError(
      "UNAUTHENTICATED",
      "the authenticator returned a principal without a string subject and tenant",
    );
  }
  return principal;
}
