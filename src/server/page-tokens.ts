import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { AgentError } from "../errors/agent-error.js";

/** Shortest accepted page-token secret (bytes of the file, surrounding whitespace ignored). */
export const MIN_PAGE_TOKEN_SECRET_LENGTH = 32;

/** Bytes of HMAC-SHA256 kept in a page token (128 bits). */
const MAC_BYTES = 16;

/**
 * Signs the page tokens agentd hands out (ListSessions, ListSnapshots) and
 * checks the ones it gets back: a token is the store's cursor plus an
 * HMAC-SHA256 over it and the call's scope (which list, the tenant, the
 * session or agent filter). A changed byte, or a token used by another tenant
 * or for another list, fails INVALID_ARGUMENT; the store never sees it.
 *
 * Instances verify each other's tokens only when they share a key: built
 * from `--page-token-secret-file` they do (and tokens survive restarts);
 * the default random key is this process's only.
 */
export class PageTokens {
  private constructor(private readonly key: Buffer) {}

  /** A random key of this process: tokens do not survive a restart and no other instance accepts them. */
  static random(): PageTokens {
    return new PageTokens(randomBytes(32));
  }

  /** A key derived from `secret` (at least 32 bytes): every instance given the same secret accepts the others' tokens. */
  static fromSecret(secret: string | Buffer): PageTokens {
    const bytes = typeof secret === "string" ? Buffer.from(secret, "utf8") : secret;
    if (bytes.length < MIN_PAGE_TOKEN_SECRET_LENGTH) {
      throw new RangeError(`a page-token secret must be at least ${MIN_PAGE_TOKEN_SECRET_LENGTH} bytes`);
    }
    return new PageTokens(createHmac("sha256", "agentd page tokens v1").update(bytes).digest());
  }

  /**
   * Reads `--page-token-secret-file` (its content, surrounding whitespace
   * ignored, at least 32 bytes). Throws an Error naming the file, never its content.
   */
  static fromSecretFile(file: string): PageTokens {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new Error(
        `--page-token-secret-file ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
        { cause: err },
      );
    }
    const secret = text.trim();
    if (Buffer.byteLength(secret) < MIN_PAGE_TOKEN_SECRET_LENGTH) {
      throw new Error(
        `--page-token-secret-file ${file}: the secret must be at least ${MIN_PAGE_TOKEN_SECRET_LENGTH} bytes (e.g. \`openssl rand -hex 32\`)`,
      );
    }
    return PageTokens.fromSecret(secret);
  }

  /** The token to hand out for the store's `cursor` within `scope` (e.g. `["snapshots", tenant, sessionId]`). */
  sign(cursor: string, scope: readonly string[]): string {
    return `${Buffer.from(cursor, "utf8").toString("base64url")}.${this.mac(cursor, scope).toString("base64url")}`;
  }

  /**
   * The store cursor of a token {@link sign} issued for the same `scope`;
   * throws INVALID_ARGUMENT for anything else (the message echoes the
   * token; the server cuts long ones).
   */
  verify(token: string, scope: readonly string[]): string {
    const dot = token.indexOf(".");
    const encoded = dot < 0 ? "" : token.slice(0, dot);
    const mac = Buffer.from(dot < 0 ? "" : token.slice(dot + 1), "base64url");
    const cursor = Buffer.from(encoded, "base64url").toString("utf8");
    const expected = this.mac(cursor, scope);
    const valid = /^[\w-]+\.[\w-]+$/.test(token) && mac.length === expected.length && timingSafeEqual(mac, expected);
    if (!valid) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `invalid page_token "${token}": pass the next_page_token of a previous page unchanged, with the same filters and credentials (tokens of another agentd are only accepted when the instances share --page-token-secret-file)`,
      );
    }
    return cursor;
  }

  private mac(cursor: string, scope: readonly string[]): Buffer {
    const hmac = createHmac("sha256", this.key);
    for (const part of scope) hmac.update(`${Buffer.byteLength(part)}:${part}`);
    return hmac.update(`|${cursor}`).digest().subarray(0, MAC_BYTES);
  }
}
