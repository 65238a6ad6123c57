import type { PeerCertificate } from "node:tls";
import type { Principal } from "../../types/principal.js";

/** What an authenticator sees of a call: never the body, always before it runs. */
export interface AuthRequest {
  /** `/package.Service/Method`. */
  readonly procedure: string;
  /** Request headers (gRPC metadata); `authorization` carries bearer tokens. */
  readonly headers: Headers;
  /** The client certificate of a TLS connection that presented one (verified against `--tls-client-ca`). */
  readonly peerCertificate?: PeerCertificate;
}

/**
 * Decides who a call acts for: a {@link Principal}, or null when the request
 * carries no credential this authenticator accepts. Throwing (or rejecting)
 * fails the call: an AgentError keeps its code, anything else is
 * UNAUTHENTICATED with a message that never repeats the credential.
 * Agents modules may export one as `authenticate`.
 */
export type Authenticate = (request: AuthRequest) => Principal | null | Promise<Principal | null>;

/**
 * Tries each authenticator in order; the first principal wins. Resolves to
 * null when none accepts the request.
 */
export function firstAuthenticated(authenticators: readonly Authenticate[]): Authenticate {
  return async (request) => {
    for (const authenticate of authenticators) {
      const principal = await authenticate(request);
      if (principal) return principal;
    }
    return null;
  };
}
