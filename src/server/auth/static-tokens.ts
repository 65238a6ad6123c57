import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Principal } from "../../types/principal.js";
import type { Authenticate } from "./authenticator.js";
import { bearerToken } from "./bearer-token.js";

/** Shortest token accepted in a tokens file: shorter ones are guessable. */
export const MIN_TOKEN_LENGTH = 16;

/** A tokens file that cannot be used; the message names the file and line (never the token). */
export class TokenFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TokenFileError";
  }
}

const digest = (token: string): string => createHash("sha256").update(token).digest("hex");

/**
 * Parses a tokens file: one `TOKEN TENANT [SUBJECT]` per line, separated by
 * spaces or tabs; blank lines and lines starting with `#` are ignored. The
 * subject defaults to the tenant. Returns the principals keyed by the SHA-256
 * of their token (the tokens themselves are not kept). Throws
 * {@link TokenFileError} for a malformed line, a short or repeated token.
 */
export function parseTokenFile(text: string, file: string): Map<string, Principal> {
  const principals = new Map<string, Principal>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const where = `${file} line ${index + 1}`;
    const fields = line.split(/\s+/);
    if (fields.length < 2 || fields.length > 3) {
      throw new TokenFileError(`${where}: expected "TOKEN TENANT [SUBJECT]", got ${fields.length} field(s)`);
    }
    const [token, tenant, subject] = fields as [string, string, string | undefined];
    if (token.length < MIN_TOKEN_LENGTH) {
      throw new TokenFileError(
        `${where}: the token is shorter than ${MIN_TOKEN_LENGTH} characters (use e.g. \`openssl rand -hex 32\`)`,
      );
    }
    const key = digest(token);
    if (principals.has(key)) throw new TokenFileError(`${where}: the token is listed twice`);
    principals.set(key, Object.freeze({ subject: subject ?? tenant, tenant, claims: Object.freeze({}) }));
  });
  return principals;
}

/** Bearer tokens read from a file, with {@link StaticTokens.reload} for SIGHUP. */
export class StaticTokens {
  private principals: Map<string, Principal>;
  private reloads = 0;

  /** Reads `file` at once; throws {@link TokenFileError} when it cannot be read or parsed. */
  constructor(readonly file: string) {
    this.principals = StaticTokens.read(file);
  }

  /** How many tokens are in force. */
  get size(): number {
    return this.principals.size;
  }

  /**
   * How many times the tokens were replaced by {@link reload}: a Chat
   * authenticated before the latest reload re-checks its token at its next
   * input (`CallGuardOptions.credentialsGeneration`).
   */
  get generation(): number {
    return this.reloads;
  }

  /**
   * Re-reads the file. On success the new tokens replace the old ones at once
   * (unary calls in flight keep the principal they got; open streams re-check
   * their token at their next input); on failure the old tokens
   * stay in force and the error is thrown.
   */
  reload(): number {
    this.principals = StaticTokens.read(this.file);
    this.reloads++;
    return this.principals.size;
  }

  /** The authenticator: the principal of a known bearer token, null otherwise. */
  readonly authenticate: Authenticate = (request) => {
    const token = bearerToken(request.headers);
    return token === undefined ? null : (this.principals.get(digest(token)) ?? null);
  };

  private static read(file: string): Map<string, Principal> {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new TokenFileError(
        `cannot read the tokens file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    return parseTokenFile(text, file);
  }
}
