import { AgentError } from "../../src/errors/agent-error.js";
import { LAYOUT_NAMES } from "./store-layout.js";

/**
 * Turns a tenant path prefix into safe relative path segments: splits on `/`
 * and `\`, drops empty segments (so absolute paths become relative), rejects
 * `.` and `..` segments with INVALID_ARGUMENT, and percent-encodes every
 * character outside `[A-Za-z0-9_-]` plus a leading dot, so distinct prefixes
 * never map to the same directory and no segment can start with `.` (the
 * store's own `.`-prefixed entries can never be reached). A segment equal
 * (case-insensitively) to a name of the store layout (`records`, `sessions`,
 * `agentd-store.json`) gets its first character percent-encoded too, so a
 * tenant directory never lands on another directory's records or heads.
 */
export function sanitizePathPrefix(prefix: string): string[] {
  const segments = prefix.split(/[\\/]+/).filter((s) => s.length > 0);
  return segments.map((segment) => {
    if (segment === "." || segment === "..") {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `path prefix ${JSON.stringify(prefix)} must not contain "." or ".." segments`,
      );
    }
    let out = "";
    for (const ch of segment) {
      out += /[A-Za-z0-9_-]/.test(ch) || (ch === "." && out.length > 0) ? ch : encodeChar(ch);
    }
    return LAYOUT_NAMES.has(out.toLowerCase()) ? encodeChar(out[0]!) + out.slice(1) : out;
  });
}

function encodeChar(ch: string): string {
  return [...Buffer.from(ch, "utf8")].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("");
}
