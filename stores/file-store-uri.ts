/** Whether a store URI names a file store (`file:<dir>`, surrounding spaces ignored). */
export function isFileStoreUri(uri: string): boolean {
  return uri.trim().startsWith("file:");
}

/**
 * The directory a `file:` store URI names, as written: `file:./dir` → `./dir`,
 * `file:///abs/dir` → `/abs/dir` (percent-decoded); "" when it names none.
 * Throws (TypeError, URIError) for a `file://` URI that is not a URL.
 */
export function fileStoreUriPath(uri: string): string {
  const trimmed = uri.trim();
  const path = trimmed.slice("file:".length);
  return path.startsWith("//") ? decodeURIComponent(new URL(trimmed).pathname) : path;
}
