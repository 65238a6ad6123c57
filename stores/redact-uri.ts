/** Query parameters of a store URI whose values are secrets (matched case-insensitively on the name). */
const SECRET_PARAMETER = /pass|secret|token|key|credential|authmechanismproperties/i;

/**
 * A store URI safe to log, whatever it looks like (a mistyped scheme, no
 * scheme at all, blanks around it): the password of the user info (from the
 * first `:` after `//`, or from the start when there is no `//`, up to the
 * last `@`, over-redacting rather than leaking an unencoded `@` in it), the
 * whole user info when it has no password (`mongodb://APIKEY@host` becomes
 * `mongodb://***@host`: a lone user name may be a key) and
 * the values of secret-looking query parameters (`tlsCertificateKeyFilePassword`,
 * `authMechanismProperties`, anything with pass/secret/token/key in its
 * name) replaced by `***`.
 */
export function redactStoreUri(uri: string): string {
  const withoutPassword = redactUserinfo(uri);
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

/**
 * `uri` with everything between the user name's `:` and the last `@`
 * replaced by `***`, or, with no `:` before the last `@`, everything from
 * the start of the user info to that `@`.
 */
function redactUserinfo(uri: string): string {
  const slashes = uri.indexOf("//");
  const start = slashes === -1 ? 0 : slashes + 2;
  const at = uri.lastIndexOf("@");
  if (at < start) return uri;
  const colon = uri.indexOf(":", start);
  if (colon === -1 || colon > at) return `${uri.slice(0, start)}***${uri.slice(at)}`;
  return `${uri.slice(0, colon)}:***${uri.slice(at)}`;
}

/** `//user:password@` anywhere in a text (an error message quoting a URI). */
const USERINFO_IN_TEXT = /(\/\/[^\s:/@"'`]*):[^\s"'`]*@/g;

/** `//user@` (user info without a password) anywhere in a text. */
const USER_ONLY_IN_TEXT = /\/\/[^\s:/@"'`]+@/g;

/**
 * A free text (an error message, a start-up failure) with the password of
 * every `//user:password@` in it, and the user of every `//user@`, replaced
 * by `***`: the last line of defence for messages that quote a URI.
 */
export function redactUriCredentials(text: string): string {
  return text.replace(USERINFO_IN_TEXT, "$1:***@").replace(USER_ONLY_IN_TEXT, "//***@");
}
