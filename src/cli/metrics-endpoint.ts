import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { PrometheusExporter } from "@opentelemetry/exporter-prometheus";

/** Shortest accepted `--metrics-token-file` token. */
export const MIN_METRICS_TOKEN_LENGTH = 16;

/** Where and how the Prometheus text is served. */
export interface MetricsEndpointOptions {
  /** Interface to bind (`--metrics-host`, default 127.0.0.1: the metrics sum every tenant's turns and tokens). */
  host: string;
  /** TCP port (`--metrics-port`). */
  port: number;
  /** When set, a scrape must send `authorization: Bearer <token>` (else 401). */
  token?: string;
}

/** A listening metrics endpoint. */
export interface MetricsEndpoint {
  /** `http://host:port/metrics`. */
  readonly url: string;
  /** Stops listening and closes open scrape connections. */
  close(): Promise<void>;
}

/**
 * Reads the bearer token of `--metrics-token-file`: the file's content,
 * surrounding whitespace ignored, one token of at least 16 characters without
 * spaces. Throws an Error naming the file (never the token) otherwise.
 */
export function readMetricsToken(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(
      `--metrics-token-file ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      { cause: err },
    );
  }
  const token = text.trim();
  if (token.length < MIN_METRICS_TOKEN_LENGTH || /\s/.test(token)) {
    throw new Error(
      `--metrics-token-file ${file}: must hold one token of at least ${MIN_METRICS_TOKEN_LENGTH} characters without spaces (e.g. \`openssl rand -hex 32\`)`,
    );
  }
  return token;
}

const digest = (value: string): Buffer => createHash("sha256").update(value).digest();

/**
 * Serves `exporter`'s metrics as Prometheus text on `GET /metrics` of
 * `host:port` (other paths 404, other methods 405), requiring the bearer
 * `token` when given (401 with `WWW-Authenticate: Bearer` otherwise; compared
 * in constant time). Rejects with the listen error (e.g. EADDRINUSE).
 */
export async function serveMetrics(
  exporter: PrometheusExporter,
  options: MetricsEndpointOptions,
): Promise<MetricsEndpoint> {
  const expected = options.token !== undefined ? digest(options.token) : undefined;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== "/metrics") return end(res, 404, "not found: the metrics are at /metrics\n");
    if (req.method !== "GET" && req.method !== "HEAD") return end(res, 405, "use GET\n");
    if (expected !== undefined) {
      const token = /^\s*bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1];
      if (token === undefined || !timingSafeEqual(digest(token), expected)) {
        res.setHeader("www-authenticate", 'Bearer realm="agentd metrics"');
        return end(res, 401, "the metrics need `authorization: Bearer <token>` (the --metrics-token-file token)\n");
      }
    }
    exporter.getMetricsRequestHandler(req, res);
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const shown = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${shown}:${options.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function end(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(text);
}
