import { describe, expect, it } from "vitest";
import { parseRoute, routePath, type Route } from "../../src/inspector/route.js";

describe("the inspector's routes", () => {
  it("reads each view's path, IDs percent-decoded", () => {
    expect(parseRoute("/inspector/")).toEqual({ view: "sessions" });
    expect(parseRoute("/inspector")).toEqual({ view: "sessions" });
    expect(parseRoute("/inspector/sessions/s%2F1")).toEqual({ view: "session", sessionId: "s/1" });
    expect(parseRoute("/inspector/sessions/s1/snapshots/p1")).toEqual({
      view: "session",
      sessionId: "s1",
      snapshotId: "p1",
    });
    expect(parseRoute("/inspector/chat", "?agent=tasks&session=s1")).toEqual({
      view: "chat",
      agent: "tasks",
      sessionId: "s1",
    });
  });

  it("names an unknown or malformed path not-found", () => {
    for (const path of ["/other", "/inspector/nope", "/inspector/sessions/s1/x", "/inspector/sessions/%E0%A4%A"])
      expect(parseRoute(path).view).toBe("not-found");
  });

  it("writes the path each route is read back from", () => {
    const routes: Route[] = [
      { view: "sessions" },
      { view: "chat" },
      { view: "chat", agent: "tasks", sessionId: "s 1" },
      { view: "session", sessionId: "a/b" },
      { view: "session", sessionId: "s1", snapshotId: "p?1" },
    ];
    for (const route of routes) {
      const url = new URL(routePath(route), "http://x");
      expect(parseRoute(url.pathname, url.search)).toEqual(route);
    }
  });
});
