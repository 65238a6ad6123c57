import { readFileSync } from "node:fs";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
} from "jose";
import { AgentError } from "../../errors/agent-error.js";
import type { Principal } from "../../types/principal.js";
import type { Authenticate } from "./authenticator.js";
import { bearerToken } from "./bearer-token.js";
import { expiresAt } from "./credential-recheck.js";

/** How JWT bearer tokens are verified. */
export interface JwtBearerOptions {
  /** Where the signing keys are: an `https://` / `http://` JWKS URL (fetched and cached by jose) or a JWKS JSON file. */
  jwks: string;
  /** Required `aud` (one of the token's audiences must match). */
  audience: string;
  /** Required `iss`, when set. */
  issuer?: string;
  /** The claim holding the tenant; default `tenant`. Must be a non-empty string in every token. */
  tenantClaim?: string;
  /** Accepted clock difference in seconds for `exp`/`nbf`; default 30. */
  clockToleranceSeconds?: number;
}

/** Default claim carrying the tenant. */
export const DEFAULT_TENANT_CLAIM = "tenant";

/** A JWT has three base64url segments; anything else is not ours to judge. */
const looksLikeJwt = (token: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);

/** The key set for `jwks`: remote for URLs, local for files (read once, at start). Throws with an actionable message. */
function keySet(jwks: string): JWTVerifyGetKey {
  if (/^https?:\/\//i.test(jwks)) return createRemoteJWKSet(new URL(jwks), { timeoutDuration: 5_000 });
  let parsed: JSONWebKeySet;
  try {
    parsed = JSON.parse(readFileSync(jwks, "utf8")) as JSONWebKeySet;
  } catch (err) {
    throw new Error(
      `--auth-jwks ${jwks}: not a readable JWKS JSON file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      { cause: err },
    );
  }
  if (!Array.isArray(parsed?.keys)) throw new Error(`--auth-jwks ${jwks}: a JWKS file holds {"keys": [...]}`);
  return createLocalJWKSet(parsed);
}

/** Why a token was refused, safe to tell its bearer (never the token or key material). */
function refusal(err: unknown): AgentError {
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) {
    return new AgentError(
      "UNAVAILABLE",
      "the signing keys (JWKS) could not be fetched to verify the bearer token; retry later",
    );
  }
  if (err instanceof errors.JWTExpired) return new AgentError("UNAUTHENTICATED", "the bearer token (JWT) has expired");
  if (err instanceof errors.JWTClaimValidationFailed) {
    return new AgentError(
      "UNAUTHENTICATED",
      `the bearer token (JWT) was refused: its "${err.claim}" claim is not accepted here`,
    );
  }
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWSSignatureVerificationFailed) {
    return new AgentError("UNAUTHENTICATED", "the bearer token (JWT) is not signed by a trusted key");
  }
  return new AgentError("UNAUTHENTICATED", "the bearer token (JWT) is malformed or uses an unsupported algorithm");
}

/**
 * Verifies `authorization: Bearer <JWT>` with jose: signature against the
 * JWKS, `exp`/`nbf`, `aud`, and `iss` when configured. The principal is
 * `sub` (subject), the tenant claim (tenant) and the token's claims. A
 * request without a bearer token, or whose token is not a JWT, gets null (so
 * another authenticator may accept it); a JWT that fails verification fails
 * the call UNAUTHENTICATED saying why (expired, wrong audience…), or
 * UNAVAILABLE when the key set cannot be fetched. A Chat opened with a token
 * is refused UNAUTHENTICATED at its first input after the token's `exp`.
 */
export function jwtBearerAuthenticator(options: JwtBearerOptions): Authenticate {
  const keys = keySet(options.jwks);
  const tenantClaim = options.tenantClaim ?? DEFAULT_TENANT_CLAIM;
  const toleranceSeconds = options.clockToleranceSeconds ?? 30;
  return async (request) => {
    const token = bearerToken(request.headers);
    if (token === undefined || !looksLikeJwt(token)) return null;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        audience: options.audience,
        ...(options.issuer !== undefined ? { issuer: options.issuer } : {}),
        clockTolerance: toleranceSeconds,
      }));
    } catch (err) {
      throw refusal(err);
    }
    const tenant = payload[tenantClaim];
    if (typeof tenant !== "string" || tenant === "") {
      throw new AgentError("UNAUTHENTICATED", `the bearer token (JWT) has no "${tenantClaim}" claim naming the tenant`);
    }
    if (tenant.includes("\u0000")) {
      // No store could keep sessions for it (PostgreSQL text cannot hold NUL): refused at sign-in, not at its first write.
      throw new AgentError(
        "UNAUTHENTICATED",
        `the bearer token's (JWT) "${tenantClaim}" claim holds the character U+0000 (NUL), which no tenant name may hold`,
      );
    }
    const principal: Principal = {
      subject: typeof payload.sub === "string" ? payload.sub : tenant,
      tenant,
      claims: Object.freeze({ ...payload }),
    };
    Object.freeze(principal);
    // An open Chat is refused at its next input once the token has expired (tolerance included).
    return typeof payload.exp === "number" ? expiresAt(principal, (payload.exp + toleranceSeconds) * 1000) : principal;
  };
}
