import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import type { Logger } from "pino";
import { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { Health } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { dropUnreachableDeadline } from "./call-errors.js";
import { createCallContext, loggingInterceptor, logRejectedRequest, type CallLogContext } from "./call-log.js";
import {
  HealthStatus,
  registerHealthService,
  watchDependencyHealth,
  type DependencyHealthOptions,
} from "./health-service.js";
import {
  callGuardGate,
  callGuardInterceptor,
  connectionInfoKey,
  type CallGuardOptions,
  type ConnectionInfo,
} from "./auth/call-guard.js";
import { listenDualProtocol, type ListenerTls } from "./listener.js";
import { DEFAULT_CONNECTION_LIMITS, rejectedConnectionLogger, type ConnectionLimits } from "./connection-limits.js";
import { agentdNodeAdapter } from "./node-adapter.js";
import { REFLECTION_SERVICES, registerReflectionService } from "./reflection-service.js";
import { requestGate } from "./request-gate.js";
import { requestValidationInterceptor } from "./request-validation.js";
import { withCors } from "./cors.js";
import { inspectorHandler, type InspectorAssets } from "./inspector-route.js";
import type { AgentRegistry } from "../runtime/agents/agent-registry.js";
import { fairShareInterceptor } from "./fair-share-interceptor.js";
import { DEFAULT_TENANT_LIMITS, TenantLimits, type TenantLimitOptions } from "./tenant-limits.js";
import {
  connectionSocketKey,
  defaultUnauthenticatedShare,
  UnauthenticatedShare,
  type UnauthenticatedShareOptions,
} from "./unauthenticated-share.js";
import { telemetryInterceptor } from "./telemetry-interceptor.js";
import { telemetryRegistered } from "../runtime/telemetry/telemetry.js";
import { drainSignalKey } from "./drain-signal.js";

/** Default per-message size limit: 4 MiB. */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** Default time in-flight calls get to finish on close. */
export const DEFAULT_GRACE_MS = 10_000;

/** Options for {@link startServer}. */
export interface ServerOptions {
  /** Interface to bind; default 127.0.0.1. */
  host?: string;
  /** TCP port; 0 picks a free one. */
  port: number;
  /** Structured logger; one line per RPC is written to it. */
  logger: Logger;
  /** Largest accepted request message; larger ones fail RESOURCE_EXHAUSTED. Default 4 MiB. */
  maxMessageBytes?: number;
  /** Registers `agentd.v1.AgentService` (and anything else) on the router. */
  registerAgentService: (router: ConnectRouter) => void;
  /**
   * Services to list in reflection and health besides health and reflection
   * themselves; default `[agentd.v1.AgentService]`.
   */
  services?: readonly DescService[];
  /** Browser origins allowed to call cross-origin (`*` for any); default none. */
  corsOrigins?: readonly string[];
  /**
   * Connection timeouts and caps (first bytes, HTTP/1.1 headers, idle
   * connections, max connections, HTTP/2 streams per connection); unset ones
   * take {@link DEFAULT_CONNECTION_LIMITS}.
   */
  connectionLimits?: Partial<ConnectionLimits>;
  /**
   * Probe of the session store (`SessionStore.ping`): health turns
   * NOT_SERVING while it fails, SERVING when it recovers (see
   * `watchDependencyHealth`; default every 2 s).
   */
  storeHealth?: Omit<DependencyHealthOptions, "onChange">;
  /**
   * Who may call: an authenticator (no credentials or bad ones →
   * UNAUTHENTICATED; health always open), whether reflection needs
   * credentials, and the loopback Host check. Default: no authentication.
   */
  auth?: CallGuardOptions;
  /** Serve TLS on the port (ALPN h2 and HTTP/1.1), optionally requiring client certificates. */
  tls?: ListenerTls;
  /**
   * Trace every RPC (a server span joining the caller's W3C trace context)
   * and record `rpc.server.call.duration` and `agentd.streams.open`, through
   * `@opentelemetry/api`: register an OpenTelemetry SDK first (`agentd serve`
   * does when `OTEL_EXPORTER_OTLP_ENDPOINT`, `--otel` or `--metrics-port` is
   * set). Default: on when an OpenTelemetry SDK is registered globally when
   * the server starts; off, no interceptor is installed at all.
   */
  telemetry?: boolean;
  /**
   * With authentication (`auth.authenticate`): what callers without
   * credentials may hold (default: half of `maxConnections` connections and
   * as many calls, streams ending after 60 s) and each tenant's rate and
   * concurrent invocations (default {@link DEFAULT_TENANT_LIMITS}; 0 =
   * unlimited). Without authentication nothing is limited per caller.
   */
  fairShare?: { unauthenticated?: Partial<UnauthenticatedShareOptions>; tenants?: Partial<TenantLimitOptions> };
  /**
   * Serve the inspector (a single-page app, a client of this API) at
   * `/inspector/` on the same port, from these files (see
   * {@link inspectorHandler}). Default: not served (those paths are 404).
   */
  inspector?: InspectorAssets;
  /**
   * Answer MCP (Streamable HTTP) at `/mcp` on the same port: one tool per
   * server-managed agent of this registry (see `mcpRoute`), authenticated
   * like every call. Default: not served.
   */
  mcp?: { registry: AgentRegistry };
}

/** Options for {@link RunningServer.close}. */
export interface CloseOptions {
  /** How long in-flight calls may run before they are cancelled; default 10 s. */
  graceMs?: number;
}

/** A listening agentd server. */
export interface RunningServer {
  /** The bound host. */
  readonly host: string;
  /** The bound port. */
  readonly port: number;
  /** `http://host:port` (`https://` with TLS), the base URL for Connect / gRPC-Web clients. */
  readonly url: string;
  /** Health statuses (e.g. to flip a service to NOT_SERVING). */
  readonly health: HealthStatus;
  /**
   * Graceful shutdown: health turns NOT_SERVING (pushed to watchers), the port
   * stops accepting (HTTP/2 connections get GOAWAY), open Chats end with
   * UNAVAILABLE after their running turn (at once when idle) so their clients
   * reconnect elsewhere, in-flight calls run up to `graceMs`, then remaining calls
   * are cancelled with UNAVAILABLE and their sockets destroyed. Resolves when
   * everything is closed; calling it twice returns the same promise.
   */
  close(options?: CloseOptions): Promise<void>;
}

/**
 * Starts agentd on one cleartext port serving gRPC (HTTP/2), gRPC-Web and
 * Connect (HTTP/1.1 and HTTP/2), with `grpc.health.v1.Health` and server
 * reflection (v1 and v1alpha) next to the agent service. Rejects when the
 * port cannot be bound.
 */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const logger = options.logger;
  const services = options.services ?? [AgentService];
  const health = new HealthStatus(services.map((s) => s.typeName));
  const shutdown = new AbortController();
  /** Aborted when draining starts (after GOAWAY): long-lived calls hand their work off (see drainSignalKey). */
  const draining = new AbortController();

  const callLogs = new WeakMap<object, CallLogContext>();
  // Credentials are checked by the request gate, from the headers, before any
  // body is read or decoded; the interceptor then lets the admitted call pass.
  const guard = callGuardGate(options.auth ?? {});
  const maxConnections = options.connectionLimits?.maxConnections ?? DEFAULT_CONNECTION_LIMITS.maxConnections;
  const fairShare =
    options.auth?.authenticate !== undefined
      ? {
          unauthenticated: new UnauthenticatedShare({
            ...defaultUnauthenticatedShare(maxConnections),
            ...options.fairShare?.unauthenticated,
          }),
          tenants: new TenantLimits({ ...DEFAULT_TENANT_LIMITS, ...options.fairShare?.tenants }),
        }
      : undefined;
  const connectHandler = agentdNodeAdapter({
    routes: (router) => {
      registerHealthService(router, health);
      registerReflectionService(router, [...services, Health, ...REFLECTION_SERVICES]);
      options.registerAgentService(router);
    },
    readMaxBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    // Proto JSON's own rule (connect-es relaxes it by default): an unknown
    // field is INVALID_ARGUMENT naming it, so a typo does not pass silently.
    jsonOptions: { ignoreUnknownFields: false },
    interceptors: [
      ...((options.telemetry ?? telemetryRegistered()) ? [telemetryInterceptor()] : []),
      loggingInterceptor(logger),
      callGuardInterceptor(options.auth ?? {}),
      ...(fairShare ? [fairShareInterceptor(fairShare)] : []),
      requestValidationInterceptor(),
    ],
    requestGate: async (context) => {
      requestGate(context);
      await guard(context);
    },
    onWriteError: (procedure, err) => logger.warn({ procedure, err }, "writing the response failed"),
    onRequestError: (procedure, err) => logger.error({ procedure, err }, "request could not be handled; answered 500"),
    shutdownSignal: shutdown.signal,
    contextValues: (req) => {
      const { values, log } = createCallContext(req.httpVersion);
      values.set(connectionInfoKey, connectionInfoOf(req));
      values.set(drainSignalKey, draining.signal);
      if (fairShare) values.set(connectionSocketKey, socketOf(req));
      callLogs.set(req, log);
      return values;
    },
  });
  const inspector = options.inspector ? inspectorHandler(options.inspector) : undefined;
  // Loaded only when MCP is served: the MCP SDK is a large part of a start's module loading.
  const mcp = options.mcp
    ? (await import("./mcp/mcp-route.js")).mcpRoute({
        registry: options.mcp.registry,
        auth: options.auth ?? {},
        logger,
        maxBodyBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
        connectionInfo: connectionInfoOf,
      })
    : undefined;
  // Requests that never reach the logging interceptor still get their line.
  const handler: typeof connectHandler = (req, res) => {
    if (inspector?.(req, res)) return;
    if (mcp?.(req, res)) return;
    const started = performance.now();
    res.once("close", () => {
      const log = callLogs.get(req);
      if (log?.intercepted) return;
      logRejectedRequest(logger, req, res.statusCode, performance.now() - started, log?.outcome);
    });
    dropUnreachableDeadline(req.headers);
    connectHandler(req, res);
  };

  const listener = await listenDualProtocol({
    host: options.host,
    port: options.port,
    handler: withCors(handler, { allowedOrigins: options.corsOrigins ?? [] }),
    ...(options.tls !== undefined ? { tls: options.tls } : {}),
    ...(options.connectionLimits !== undefined ? { limits: options.connectionLimits } : {}),
    ...(fairShare ? { unauthenticated: fairShare.unauthenticated } : {}),
    onConnectionRejected: rejectedConnectionLogger(logger, maxConnections),
  });
  const url = `${options.tls ? "https" : "http"}://${listener.host.includes(":") ? `[${listener.host}]` : listener.host}:${listener.port}`;
  const stopStoreHealth = options.storeHealth
    ? watchDependencyHealth(health, {
        ...options.storeHealth,
        onChange: (available, err) =>
          available
            ? logger.info("session store reachable again: health SERVING")
            : logger.warn({ err }, "session store unreachable: health NOT_SERVING"),
      })
    : () => undefined;

  let closing: Promise<void> | undefined;
  const close = (closeOptions?: CloseOptions): Promise<void> => {
    closing ??= (async () => {
      const graceMs = closeOptions?.graceMs ?? DEFAULT_GRACE_MS;
      logger.info({ inFlight: listener.inFlight(), graceMs }, "agentd draining");
      stopStoreHealth();
      health.setAllNotServing();
      await new Promise((resolve) => setImmediate(resolve));
      health.endWatches();
      const closed = listener.close({
        graceMs,
        onGraceExpired: () => {
          logger.warn({ inFlight: listener.inFlight() }, "drain grace expired; cancelling remaining calls");
          shutdown.abort(new ConnectError("server is shutting down", Code.Unavailable));
        },
      });
      // The port is closed and HTTP/2 connections have their GOAWAY: open Chats now hand off after their running turn.
      draining.abort();
      await closed;
      logger.info("agentd stopped");
    })();
    return closing;
  };

  return { host: listener.host, port: listener.port, url, health, close };
}

/** The socket of a Node request's connection (an HTTP/2 session's socket proxy for HTTP/2). */
function socketOf(req: IncomingMessage | Http2ServerRequest): Socket | undefined {
  return "stream" in req ? req.stream.session?.socket : req.socket;
}

/** The authority and (mutual TLS) verified client certificate of a Node request. */
function connectionInfoOf(req: IncomingMessage | Http2ServerRequest): ConnectionInfo {
  const h2 = "stream" in req ? req : undefined;
  const authority = h2 ? h2.authority : req.headers.host;
  const socket = socketOf(req) as Partial<TLSSocket> | undefined;
  const cert = socket?.encrypted === true && socket.authorized === true ? socket.getPeerCertificate?.() : undefined;
  return {
    ...(authority ? { authority } : {}),
    ...(cert && Object.keys(cert).length > 0 ? { peerCertificate: cert } : {}),
  };
}
