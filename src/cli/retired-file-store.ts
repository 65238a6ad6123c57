import { fileStoreUriPath } from "../../stores/file-store-uri.js";
import { redactStoreUri } from "../../stores/redact-uri.js";

/** The directory a `file:` URI names, as the user wrote it, without trailing slashes ("." for none). */
function fileStoreDir(uri: string): string {
  let dir: string;
  try {
    dir = fileStoreUriPath(uri);
  } catch {
    dir = uri.trim().slice("file:".length); // not a URL this hint can read: quote the path as written
  }
  if (dir.length > 1) dir = dir.replace(/\/+$/, "");
  return dir === "" ? "." : dir;
}

/**
 * Why a `file:` store is refused as a store agentd serves or writes, and what
 * to run instead: copy the sessions into SQLite (next to the file store's
 * directory), then serve that. `what` names where the URI was given
 * (`--store`, copy-store's destination); `from` is copy-store's source, which
 * the hint copies instead of the file store itself.
 */
export function retiredFileStoreMessage(what: string, uri: string, from?: string): string {
  const dir = fileStoreDir(uri);
  const sqlite = `sqlite:${dir === "/" ? "" : dir}/agentd.db`;
  const source = from === undefined ? `file:${dir}` : redactStoreUri(from.trim());
  return (
    `${what} ${uri.trim()}: the file store is retired; copy ${from === undefined ? "its" : "the"} sessions into SQLite with ` +
    `"agentd copy-store ${source} ${sqlite}", then serve --store ${sqlite}`
  );
}
