import { readFileSync } from "node:fs";
import { isLoopbackHost } from "../server/auth/loopback.js";
import { firstAuthenticated, type Authenticate } from "../server/auth/authenticator.js";
import { clientCertificateAuthenticator } from "../server/auth/client-certificate.js";
import { jwtBearerAuthenticator } from "../server/auth/jwt-bearer.js";
import { StaticTokens } from "../server/auth/static-tokens.js";
import type { CallGuardOptions } from "../server/auth/call-guard.js";
import type { ListenerTls } from "../server/listener.js";
import type { SecurityConfig } from "./serve-config.js";

/** The server's security, built from the command line and the agents modules. */
export interface ServeSecurity {
  /** For `startServer({ auth })`. */
  auth: CallGuardOptions;
  /** For `startServer({ tls })`, when TLS is on. */
  tls?: ListenerTls;
  /** The authentication methods in force, for the start-up log line (no secrets). */
  methods: string[];
  /** Re-reads `--auth-tokens` (SIGHUP); returns the number of tokens, throws (keeping the old ones) when the file is bad. */
  reloadTokens?: () => number;
}

/** Refusal to start: the message says what to configure. */
export class InsecureServeError extends Error {
  constructor(host: string) {
    super(
      `refusing to serve ${host} without authentication: anyone who can reach it could read, write and abort every session. ` +
        `Configure --auth-tokens, --auth-jwks, --tls-client-ca or an "authenticate" export, or pass --insecure if the network is trusted`,
    );
    this.name = "InsecureServeError";
  }
}

function readPem(flag: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new Error(
      `${flag} ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      {
        cause: err,
      },
    );
  }
}

/**
 * Builds the authenticator chain (the modules' `authenticate` exports, then
 * `--auth-tokens`, then `--auth-jwks`, then the client certificate of
 * `--tls-client-ca`; the first that accepts a call decides) and the TLS
 * settings. Without any authentication, a loopback `host` is served with the
 * Host check on (DNS rebinding; `--insecure` turns it off, e.g. behind a
 * proxy that forwards another Host) and any other host needs `--insecure`
 * ({@link InsecureServeError} otherwise).
 */
export function setUpSecurity(
  config: SecurityConfig,
  host: string,
  moduleAuthenticators: readonly Authenticate[],
): ServeSecurity {
  const chain: Authenticate[] = [...moduleAuthenticators];
  const methods: string[] = moduleAuthenticators.length > 0 ? ["module"] : [];
  let tokens: StaticTokens | undefined;
  if (config.authTokensFile !== undefined) {
    tokens = new StaticTokens(config.authTokensFile);
    chain.push(tokens.authenticate);
    methods.push("tokens");
  }
  if (config.jwt) {
    chain.push(jwtBearerAuthenticator(config.jwt));
    methods.push("jwt");
  }
  let tls: ListenerTls | undefined;
  if (config.tls) {
    tls = { cert: readPem("--tls-cert", config.tls.certFile), key: readPem("--tls-key", config.tls.keyFile) };
    if (config.tls.clientCaFile !== undefined) {
      tls.clientCa = readPem("--tls-client-ca", config.tls.clientCaFile);
      chain.push(clientCertificateAuthenticator);
      methods.push("client-certificate");
    }
  }
  const authenticated = chain.length > 0;
  const loopback = isLoopbackHost(host);
  if (!authenticated && !loopback && !config.insecure) throw new InsecureServeError(host);
  return {
    auth: {
      ...(authenticated ? { authenticate: chain.length === 1 ? chain[0] : firstAuthenticated(chain) } : {}),
      reflection: config.reflection,
      loopbackHostsOnly: !authenticated && loopback && !config.insecure,
      ...(tokens ? { credentialsGeneration: () => tokens.generation } : {}),
    },
    ...(tls ? { tls } : {}),
    methods,
    ...(tokens ? { reloadTokens: () => tokens.reload() } : {}),
  };
}
