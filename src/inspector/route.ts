/** The inspector's base path: every view's URL starts with it. */
export const BASE = "/inspector";

/**
 * A view of the inspector, as its URL says:
 * `/inspector/` (sessions), `/inspector/chat[?agent=<name>&session=<sessionId>]`,
 * `/inspector/sessions/<sessionId>` and
 * `/inspector/sessions/<sessionId>/snapshots/<snapshotId>`.
 */
export type Route =
  | { view: "sessions" }
  | { view: "chat"; agent?: string; sessionId?: string }
  | { view: "session"; sessionId: string; snapshotId?: string }
  | { view: "not-found"; path: string };

/** The route of a URL path and query (IDs percent-decoded); an unknown path is `not-found`. */
export function parseRoute(pathname: string, search = ""): Route {
  if (!pathname.startsWith(BASE)) return { view: "not-found", path: pathname };
  const parts = pathname
    .slice(BASE.length)
    .split("/")
    .filter((p) => p !== "");
  let decoded: string[];
  try {
    decoded = parts.map(decodeURIComponent);
  } catch {
    return { view: "not-found", path: pathname };
  }
  const [first, sessionId, third, snapshotId, ...rest] = decoded;
  if (first === undefined) return { view: "sessions" };
  if (first === "chat" && sessionId === undefined) {
    const query = new URLSearchParams(search);
    const agent = query.get("agent") ?? undefined;
    const session = query.get("session") ?? undefined;
    return { view: "chat", ...(agent ? { agent } : {}), ...(session ? { sessionId: session } : {}) };
  }
  if (first !== "sessions" || rest.length > 0) return { view: "not-found", path: pathname };
  if (sessionId === undefined) return { view: "sessions" };
  if (third === undefined) return { view: "session", sessionId };
  if (third === "snapshots" && snapshotId !== undefined) return { view: "session", sessionId, snapshotId };
  return { view: "not-found", path: pathname };
}

/** The URL path of `route` (the inverse of {@link parseRoute}). */
export function routePath(route: Route): string {
  switch (route.view) {
    case "sessions":
      return `${BASE}/`;
    case "chat": {
      const query = new URLSearchParams();
      if (route.agent) query.set("agent", route.agent);
      if (route.sessionId) query.set("session", route.sessionId);
      return `${BASE}/chat${query.size > 0 ? `?${query}` : ""}`;
    }
    case "session":
      return (
        `${BASE}/sessions/${encodeURIComponent(route.sessionId)}` +
        (route.snapshotId !== undefined ? `/snapshots/${encodeURIComponent(route.snapshotId)}` : "")
      );
    case "not-found":
      return route.path;
  }
}
