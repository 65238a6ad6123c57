import type { SecurityConfig } from "./serve-config.js";
import { UsageError } from "./usage-error.js";

/** The security flags, checked for combinations that cannot work. */
export function securityConfig(values: Record<string, string | boolean | string[] | undefined>): SecurityConfig {
  const text = (name: string): string | undefined => {
    const value = values[name];
    if (value === undefined) return undefined;
    if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} must not be empty`);
    return value;
  };
  const jwks = text("auth-jwks");
  const audience = text("auth-audience");
  const issuer = text("auth-issuer");
  const tenantClaim = text("auth-tenant-claim");
  if (jwks === undefined && (audience ?? issuer ?? tenantClaim) !== undefined) {
    throw new UsageError("--auth-audience, --auth-issuer and --auth-tenant-claim only apply with --auth-jwks");
  }
  if (jwks !== undefined && audience === undefined) {
    throw new UsageError(
      "--auth-jwks needs --auth-audience: without it, tokens issued for other services would be accepted",
    );
  }
  const certFile = text("tls-cert");
  const keyFile = text("tls-key");
  const clientCaFile = text("tls-client-ca");
  if ((certFile === undefined) !== (keyFile === undefined))
    throw new UsageError("--tls-cert and --tls-key go together");
  if (clientCaFile !== undefined && certFile === undefined)
    throw new UsageError("--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)");
  const reflection = text("reflection") ?? "open";
  if (reflection !== "open" && reflection !== "authenticated") {
    throw new UsageError(`--reflection must be open or authenticated, got "${reflection}"`);
  }
  const authTokensFile = text("auth-tokens");
  return {
    ...(authTokensFile !== undefined ? { authTokensFile } : {}),
    ...(jwks !== undefined && audience !== undefined
      ? {
          jwt: {
            jwks,
            audience,
            ...(issuer !== undefined ? { issuer } : {}),
            ...(tenantClaim !== undefined ? { tenantClaim } : {}),
          },
        }
      : {}),
    ...(certFile !== undefined && keyFile !== undefined
      ? { tls: { certFile, keyFile, ...(clientCaFile !== undefined ? { clientCaFile } : {}) } }
      : {}),
    insecure: values.insecure === true,
    reflection,
  };
}
