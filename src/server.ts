/**
 * The agentd server for embedding (package subpath `@agentd-dev/agentd/server`): start the
 * same server `agentd serve` runs, in-process, with your own registry, store,
 * logger and authentication.
 *
 * ```ts
 * import { AgentRegistry, InMemorySessionStore } from "@agentd-dev/agentd";
 * import { agentServiceRoutes, startServer } from "@agentd-dev/agentd/server";
 * const registry = new AgentRegistry({ defaultStore: new InMemorySessionStore() });
 * registry.register(myAgent);
 * const server = await startServer({ port: 50051, logger, registerAgentService: agentServiceRoutes(registry) });
 * ```
 */
export {
  startServer,
  DEFAULT_GRACE_MS,
  DEFAULT_MAX_MESSAGE_BYTES,
  type CloseOptions,
  type RunningServer,
  type ServerOptions,
} from "./server/server.js";
export { agentServiceRoutes, type AgentServiceOptions } from "./server/agent-service.js";
export { PageTokens, MIN_PAGE_TOKEN_SECRET_LENGTH } from "./server/page-tokens.js";
export { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from "./server/connection-limits.js";
export { DEFAULT_TENANT_LIMITS, type TenantLimitOptions } from "./server/tenant-limits.js";
export { defaultUnauthenticatedShare, type UnauthenticatedShareOptions } from "./server/unauthenticated-share.js";
export { RetryInfoSchema } from "./server/retry-info.js";
export type { ListenerTls } from "./server/listener.js";
export { HealthStatus, type DependencyHealthOptions } from "./server/health-service.js";
// Authentication built-ins.
export { firstAuthenticated, type Authenticate, type AuthRequest } from "./server/auth/authenticator.js";
export { bearerToken } from "./server/auth/bearer-token.js";
export { principalOf, type CallGuardOptions, type ConnectionInfo } from "./server/auth/call-guard.js";
export { expiresAt } from "./server/auth/credential-recheck.js";
export { clientCertificateAuthenticator } from "./server/auth/client-certificate.js";
export { jwtBearerAuthenticator, DEFAULT_TENANT_CLAIM, type JwtBearerOptions } from "./server/auth/jwt-bearer.js";
export { isLoopbackHost } from "./server/auth/loopback.js";
export { StaticTokens, TokenFileError, parseTokenFile, MIN_TOKEN_LENGTH } from "./server/auth/static-tokens.js";
export { ANONYMOUS, type Principal } from "./types/principal.js";
// The whole `agentd serve` command (store, agents modules, security, server), without signal handling.
export { startServe, createCliLogger, type ServeInstance } from "./cli/serve-command.js";
export type { SecurityConfig, ServeConfig } from "./cli/serve-config.js";
