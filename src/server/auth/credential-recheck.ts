import { createContextKey } from "@connectrpc/connect";
import { AgentError } from "../../errors/agent-error.js";
import type { Principal } from "../../types/principal.js";

/**
 * Re-checks the credential of a long-lived call (a Chat) before each of its
 * later inputs: resolves (or returns) when the credential still holds, throws
 * an UNAUTHENTICATED AgentError when it was revoked or has expired. Cheap when
 * nothing changed: one clock read and one integer comparison, no await.
 */
export type CredentialCheck = () => void | Promise<void>;

/** Context key of the call's {@link CredentialCheck}; undefined on calls that were not authenticated. */
export const credentialCheckKey = createContextKey<CredentialCheck | undefined>(undefined, {
  description: "agentd credential re-check",
});

const expiries = new WeakMap<Principal, number>();

/**
 * Records when `principal`'s credential stops being valid (epoch ms, any
 * clock tolerance included): a long-lived call acting for it is refused at
 * its next input after that instant. Authenticators call it for credentials
 * that expire (a JWT's `exp`); returns the principal.
 */
export function expiresAt<P extends Principal>(principal: P, epochMs: number): P {
  expiries.set(principal, epochMs);
  return principal;
}

/** When `principal`'s credential expires (epoch ms), if its authenticator said so. */
export function expiryOf(principal: Principal): number | undefined {
  return expiries.get(principal);
}

/** What {@link credentialCheck} needs to re-authenticate a call. */
export interface RecheckSource {
  /** The principal the call was authenticated as. */
  readonly principal: Principal;
  /** The accepted-credentials generation when it was (see `CallGuardOptions.credentialsGeneration`). */
  readonly generation: number;
  /** The current generation. */
  readonly currentGeneration: () => number;
  /** Runs the server's authenticators again on the call's original request. */
  readonly reauthenticate: () => Promise<Principal | null>;
}

/**
 * The {@link CredentialCheck} of one call: refuses it once the credential's
 * expiry (see {@link expiresAt}) has passed; and when the accepted
 * credentials changed since it was authenticated (a tokens file reloaded),
 * runs the authenticators again: no principal, or another subject or tenant,
 * refuses it. A still-valid credential is re-authenticated at most once per
 * generation.
 */
export function credentialCheck(source: RecheckSource): CredentialCheck {
  const expiry = expiryOf(source.principal);
  let generation = source.generation;
  return () => {
    if (expiry !== undefined && Date.now() >= expiry) {
      throw new AgentError(
        "UNAUTHENTICATED",
        "the credential of this stream has expired: open a new one with a fresh token",
      );
    }
    const current = source.currentGeneration();
    if (current === generation) return;
    return source.reauthenticate().then(
      (principal) => {
        if (principal?.tenant !== source.principal.tenant || principal.subject !== source.principal.subject) {
          throw revoked();
        }
        generation = current;
      },
      (err: unknown) => {
        throw err instanceof AgentError && err.status !== "UNAUTHENTICATED" ? err : revoked();
      },
    );
  };
}

function revoked(): AgentError {
  return new AgentError(
    "UNAUTHENTICATED",
    "the credential of this stream is no longer accepted (revoked): open a new one with a valid token",
  );
}
