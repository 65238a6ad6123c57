/** The path the inspector is served under. */
export const INSPECTOR_PATH = "/inspector";

/**
 * The inspector's files by their path under `/inspector/` (`index.html`,
 * `assets/inspector.js`, `assets/inspector.css`), as built by
 * scripts/build-inspector.mjs.
 */
export type InspectorAssets = ReadonlyMap<string, Uint8Array>;

/**
 * The Content-Security-Policy of every inspector response: scripts, styles
 * and calls from the page's own origin only (no inline script, no `eval`),
 * nothing else loaded, no framing, no form posting anywhere.
 */
export const INSPECTOR_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const CONTENT_TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
};

/** What the handler reads of a request (HTTP/1.1 and HTTP/2 compatibility requests both have it). */
interface InspectorRequest {
  readonly url?: string;
  readonly method?: string;
}

/** What the handler uses of a response (HTTP/1.1 and HTTP/2 compatibility responses both have it). */
interface InspectorResponse {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(): unknown;
  end(chunk: Uint8Array): unknown;
}

/**
 * A request handler for the inspector: true when it answered `req` (its path
 * is `/inspector` or under it), false for every other path (left to the API).
 * `GET`/`HEAD` of an asset answers the asset; of any other path under
 * `/inspector/` the single page's `index.html` (deep links such as
 * `/inspector/sessions/<id>` are resolved by the page's script); `/inspector`
 * redirects to `/inspector/`; other methods get 405. Every answer carries
 * {@link INSPECTOR_CSP}, `X-Content-Type-Options: nosniff`, no referrer and
 * `no-cache`.
 */
export function inspectorHandler(assets: InspectorAssets): (req: InspectorRequest, res: InspectorResponse) => boolean {
  const index = assets.get("index.html");
  if (index === undefined) throw new Error("the inspector's assets have no index.html: rebuild them (npm run build)");
  return (req, res) => {
    const path = (req.url ?? "").split("?", 1)[0]!;
    if (path !== INSPECTOR_PATH && !path.startsWith(`${INSPECTOR_PATH}/`)) return false;
    const headers: Record<string, string> = {
      "content-security-policy": INSPECTOR_CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cache-control": "no-cache",
    };
    if (req.method !== "GET" && req.method !== "HEAD") {
      answer(res, 405, { ...headers, allow: "GET, HEAD" });
      return true;
    }
    if (path === INSPECTOR_PATH) {
      answer(res, 308, { ...headers, location: `${INSPECTOR_PATH}/` });
      return true;
    }
    const name = path.slice(INSPECTOR_PATH.length + 1);
    const asset = name.startsWith("assets/") ? assets.get(name) : index;
    if (asset === undefined) {
      answer(res, 404, { ...headers, "content-type": "text/plain; charset=utf-8" }, "no such inspector asset\n");
      return true;
    }
    const extension = (name.startsWith("assets/") ? name : "index.html").split(".").pop()!;
    const type = CONTENT_TYPES[extension] ?? "application/octet-stream";
    answer(res, 200, { ...headers, "content-type": type }, req.method === "HEAD" ? undefined : asset);
    return true;
  };
}

/** Writes the status, the headers and the body (none: an empty body). */
function answer(
  res: InspectorResponse,
  status: number,
  headers: Record<string, string>,
  body?: Uint8Array | string,
): void {
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  if (body === undefined) res.end();
  else res.end(typeof body === "string" ? new TextEncoder().encode(body) : body);
}
