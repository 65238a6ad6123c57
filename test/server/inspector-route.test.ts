// `/inspector/` on the API's port (src/server/inspector-route.ts): off unless
// the server is given the inspector's files (`agentd serve --inspector`); with
// them, the assets, the single page for every other path under /inspector/
// (deep links), and the security headers. The page itself is tested in a
// browser in test/inspector/.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pino } from "pino";
import { parseCommandLine } from "../../src/cli/args.js";
import type { InspectorAssets } from "../../src/server/inspector-route.js";
import { startServer, type RunningServer } from "../../src/server/server.js";
import { REPO_ROOT } from "../harness/agentd-process.js";

/**
 * The security headers as docs/inspector.md documents them (not the code's own constant, which
 * a test could only compare with itself): the policy is the code span after "Content-Security-Policy".
 */
function documentedHeaders(): Record<string, string> {
  const doc = readFileSync(join(REPO_ROOT, "docs/inspector.md"), "utf8");
  const csp = /\*\*Content-Security-Policy\*\*[^`]*`([^`]+)`/.exec(doc)?.[1];
  const named = (header: string) => new RegExp("`" + header + ": ([^`]+)`").exec(doc)?.[1];
  const headers = {
    "content-security-policy": csp,
    "x-content-type-options": named("X-Content-Type-Options"),
    "referrer-policy": named("Referrer-Policy"),
    "cache-control": named("Cache-Control"),
  };
  for (const [name, value] of Object.entries(headers)) expect(value, `${name} in docs/inspector.md`).toBeTruthy();
  return headers as Record<string, string>;
}

const ASSETS: InspectorAssets = new Map([
  ["index.html", new TextEncoder().encode("<!doctype html><title>the page</title>")],
  ["assets/inspector.js", new TextEncoder().encode("console.log(1)")],
  ["assets/inspector.css", new TextEncoder().encode("body{}")],
]);

let server: RunningServer | undefined;

afterEach(async () => {
  await server?.close({ graceMs: 0 });
  server = undefined;
});

async function serve(inspector?: InspectorAssets): Promise<RunningServer> {
  server = await startServer({
    port: 0,
    logger: pino({ level: "silent" }),
    registerAgentService: () => undefined,
    ...(inspector ? { inspector } : {}),
  });
  return server;
}

describe("the inspector's route", () => {
  it("is off by default: /inspector/ is 404, and --inspector is false unless given", async () => {
    const { url } = await serve();
    expect((await fetch(`${url}/inspector/`)).status).toBe(404);
    const command = parseCommandLine(["serve"], {});
    expect(command.kind === "serve" && command.config.inspector).toBe(false);
    const on = parseCommandLine(["serve", "--inspector"], {});
    expect(on.kind === "serve" && on.config.inspector).toBe(true);
  });

  it("answers every path under /inspector/ that is not an asset with the page (deep links)", async () => {
    const { url } = await serve(ASSETS);
    for (const path of ["/inspector/", "/inspector/sessions/abc", "/inspector/sessions/abc/snapshots/def"]) {
      const response = await fetch(`${url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(await response.text()).toBe("<!doctype html><title>the page</title>");
    }
  });

  it("serves the assets with their content type, and 404 for an unknown asset", async () => {
    const { url } = await serve(ASSETS);
    const js = await fetch(`${url}/inspector/assets/inspector.js`);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await js.text()).toBe("console.log(1)");
    const css = await fetch(`${url}/inspector/assets/inspector.css`);
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect((await fetch(`${url}/inspector/assets/other.js`)).status).toBe(404);
  });

  it("sends the documented CSP, nosniff, no-referrer and no-cache headers on every answer", async () => {
    const documented = documentedHeaders();
    expect(documented["content-security-policy"]).toContain("script-src 'self';");
    expect(documented["content-security-policy"]).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    const { url } = await serve(ASSETS);
    for (const [path, method] of [
      ["/inspector/", "GET"],
      ["/inspector/sessions/a/snapshots/b", "GET"],
      ["/inspector/assets/inspector.js", "HEAD"],
      ["/inspector/assets/missing", "GET"],
      ["/inspector", "GET"],
      ["/inspector/", "POST"],
    ] as const) {
      const response = await fetch(`${url}${path}`, { method, redirect: "manual" });
      const sent = Object.fromEntries(Object.keys(documented).map((name) => [name, response.headers.get(name)]));
      expect([path, method, sent]).toEqual([path, method, documented]);
    }
  });

  it("redirects /inspector to /inspector/ and refuses other methods than GET and HEAD with 405", async () => {
    const { url } = await serve(ASSETS);
    const bare = await fetch(`${url}/inspector`, { redirect: "manual" });
    expect(bare.status).toBe(308);
    expect(bare.headers.get("location")).toBe("/inspector/");
    const post = await fetch(`${url}/inspector/`, { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    const head = await fetch(`${url}/inspector/`, { method: "HEAD" });
    expect(head.status).toBe(200);
  });

  it("leaves the API's paths to the API", async () => {
    const { url } = await serve(ASSETS);
    const response = await fetch(`${url}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "SERVING" });
  });
});
