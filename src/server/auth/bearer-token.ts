/**
 * The token of an `authorization: Bearer <token>` header (scheme
 * case-insensitive, surrounding spaces ignored), or undefined when the header
 * is absent or uses another scheme.
 */
export function bearerToken(headers: Headers): string | undefined {
  const value = headers.get("authorization");
  if (value === null) return undefined;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(value);
  return match?.[1];
}
