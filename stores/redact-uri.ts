/** Query parameters of a store URI whose values are secrets (matched case-insensitively on the name). */
const SECRET_PARAMETER = /pass|secret|token|key|credential|authmechanismproperties/i;

/**
 * A store URI safe to log: the password of the user info (up to the last `@`,
 * over-redacting rather than leaking an unencoded `@` in it) and the values of
 * secret-looking query parameters (`tlsCertificateKeyFilePassword`,
 * `authMechanismProperties`, anything with pass/secret/token/key in its
 * name) replaced by `***`.
 */
export function redactStoreUri(uri: string): string {
  const withoutPassword = uri.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@?]+):.*@/i, "$1:***@");
  const query = withoutPassword.indexOf("?");
  if (query === -1) return withoutPassword;
  const params = withoutPassword
    .slice(query + 1)
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      return eq !== -1 && SECRET_PARAMETER.test(pair.slice(0, eq)) ? `${pair.slice(0, eq)}=***` : pair;
    });
  return `${withoutPassword.slice(0, query)}?${params.join("&")}`;
}
