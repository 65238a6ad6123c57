/**
 * The agentd server for embedding (package subpath `agentd/server`): start the
 * same server `agentd serve` runs, in-process, with your own registry, store,
 * logger and authentication.
 *
 * ```ts
 * import { AgentRegistry, InMemorySessionStore } from "agentd";
 * import { agentServiceRoutes, startServer } from "agentd/server";
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
} from "./server.js";
export { agentServiceRoutes } from "./agent-service.js";
export { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from "./connection-limits.js";
export type { ListenerTls } from "./listener.js";
export { HealthStatus, type DependencyHealthOptions } from "./health-service.js";
// Authentication built-ins.
export { firstAuthenticated, type Authenticate, type AuthRequest } from "./auth/authenticator.js";
export { bearerToken } from "./auth/bearer-token.js";
export { principalOf, type CallGuardOptions, type ConnectionInfo } from "./auth/call-guard.js";
export { clientCertificateAuthenticator } from "./auth/client-certificate.js";
export { jwtBearerAuthenticator, DEFAULT_TENANT_CLAIM, type JwtBearerOptions } from "./auth/jwt-bearer.js";
export { isLoopbackHost } from "./auth/loopback.js";
export { StaticTokens, TokenFileError, parseTokenFile, MIN_TOKEN_LENGTH } from "./auth/static-tokens.js";
export { ANONYMOUS, type Principal } from "../types/principal.js";
// The whole `agentd serve` command (store, agents modules, security, server), without signal handling.
export { startServe, createCliLogger, type ServeInstance } from "../cli/serve-command.js";
export type { SecurityConfig, ServeConfig } from "../cli/args.js";
