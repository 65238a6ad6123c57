import { diag, DiagLogLevel, type DiagLogger } from "@opentelemetry/api";
import type { IMetricReader } from "@opentelemetry/sdk-metrics";
import type { Logger } from "pino";
import { readMetricsToken, serveMetrics, type MetricsEndpoint } from "./metrics-endpoint.js";

/** What `agentd serve` was asked for (flags); the rest comes from the standard `OTEL_*` variables. */
export interface TelemetrySettings {
  /** `--otel`: export traces and metrics by OTLP even without `OTEL_EXPORTER_OTLP_ENDPOINT` (the exporters' default, http://localhost:4318). */
  otel?: boolean;
  /** `--metrics-port`: serve Prometheus text on `http://<metricsHost>:<port>/metrics`. */
  metricsPort?: number;
  /** `--metrics-host`: interface of the Prometheus endpoint; default 127.0.0.1 (not the API's `--host`). */
  metricsHost?: string;
  /** `--metrics-token-file`: a scrape must send `authorization: Bearer <the file's token>`. */
  metricsTokenFile?: string;
}

/** Telemetry that `agentd serve` started. */
export interface TelemetryHandle {
  /** Spans and metrics go out by OTLP (`OTEL_EXPORTER_OTLP_PROTOCOL`: http/protobuf by default, http/json, grpc). */
  readonly otlp: boolean;
  /** The Prometheus scrape URL, with `--metrics-port`. */
  readonly prometheusUrl?: string;
  /** Flushes what is buffered (spans, a last metrics export) and stops the exporters. Never rejects. */
  shutdown(): Promise<void>;
}

/** Variables that name an OTLP endpoint: any of them turns OTLP export on. */
const ENDPOINT_VARIABLES = [
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
];

/**
 * Whether OTLP export is on: `--otel`, or an OTLP endpoint variable is set —
 * unless `OTEL_SDK_DISABLED=true`.
 */
export function otlpRequested(settings: TelemetrySettings, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  return settings.otel === true || ENDPOINT_VARIABLES.some((name) => (env[name] ?? "").trim() !== "");
}

/**
 * Starts the OpenTelemetry Node SDK (`startNodeSdk` of `@opentelemetry/sdk-node`)
 * when telemetry is asked for, and resolves to undefined (having loaded
 * nothing) when it is not: without `--otel`, an OTLP endpoint variable or
 * `--metrics-port`, agentd's instrumentation stays the API's no-op.
 *
 * Configuration is the SDK's, from the standard variables: endpoint,
 * protocol (`OTEL_EXPORTER_OTLP_PROTOCOL` http/protobuf, http/json or grpc,
 * and the per-signal variants), headers, `OTEL_SERVICE_NAME` (default
 * `agentd`) and `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` (+ `_ARG`),
 * `OTEL_BSP_*`, `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_PROPAGATORS` (default W3C
 * trace context + baggage), `OTEL_NODE_RESOURCE_DETECTORS` (default here:
 * service, host and os, plus agentd's own process attributes, never the
 * command line). Logs are not exported (agentd logs JSON lines to stdout). With only `--metrics-port`, no spans are exported and metrics are
 * only scraped. The SDK's own diagnostics go to `logger` (warnings and up,
 * or `OTEL_LOG_LEVEL`). Rejects when the Prometheus port cannot be bound.
 */
export async function startTelemetry(
  settings: TelemetrySettings,
  logger: Logger,
  env: NodeJS.ProcessEnv = process.env,
): Promise<TelemetryHandle | undefined> {
  const otlp = otlpRequested(settings, env);
  if (!otlp && settings.metricsPort === undefined) return undefined;
  const [{ startNodeSdk }, resources] = await Promise.all([
    import("@opentelemetry/sdk-node"),
    import("@opentelemetry/resources"),
  ]);
  const { metricReaders, endpoint } = await metricReadersFor(settings, otlp, env);
  // The SDK's default detectors include "process", whose process.command_args would carry
  // the command line (a --store URI may hold a password): agentd names the process itself.
  const detectors = (env.OTEL_NODE_RESOURCE_DETECTORS ?? "").trim() === "";
  const sdk = startNodeSdk({
    baseResource: resources.defaultResource().merge(
      resources.resourceFromAttributes({
        "service.name": "agentd",
        "process.pid": process.pid,
        "process.runtime.name": "nodejs",
        "process.runtime.version": process.versions.node,
      }),
    ),
    ...(detectors
      ? {
          resourceDetectors: [
            resources.serviceInstanceIdDetector,
            resources.serviceNameEnvDetector,
            resources.hostDetector,
            resources.osDetector,
          ],
        }
      : {}),
    logLevel: (env.OTEL_LOG_LEVEL ?? "").trim() || "warn",
    logRecordProcessors: [],
    ...(otlp ? {} : { spanProcessors: [] }),
    ...(metricReaders ? { metricReaders } : {}),
  });
  diag.setLogger(diagToPino(logger), { logLevel: diagLevel(env.OTEL_LOG_LEVEL), suppressOverrideMessage: true });
  return {
    otlp,
    ...(endpoint ? { prometheusUrl: endpoint.url } : {}),
    shutdown: async () => {
      await endpoint?.close();
      await sdk.shutdown().catch((err: unknown) => logger.warn({ err }, "telemetry shutdown failed"));
    },
  };
}

/**
 * The metric readers when `--metrics-port` is set (undefined otherwise: the
 * SDK makes the OTLP reader from the environment): the Prometheus exporter,
 * served by {@link serveMetrics} (on `--metrics-host`, default loopback,
 * behind `--metrics-token-file` when given), started here so a port in use
 * or an unusable token file fails the start, plus, when OTLP is on, the
 * periodic OTLP reader the SDK would have made (same protocol variables and
 * `OTEL_METRIC_EXPORT_INTERVAL` / `_TIMEOUT`).
 */
async function metricReadersFor(
  settings: TelemetrySettings,
  otlp: boolean,
  env: NodeJS.ProcessEnv,
): Promise<{ metricReaders?: IMetricReader[]; endpoint?: MetricsEndpoint }> {
  const port = settings.metricsPort;
  if (port === undefined) return {};
  const token = settings.metricsTokenFile !== undefined ? readMetricsToken(settings.metricsTokenFile) : undefined;
  const { PrometheusExporter } = await import("@opentelemetry/exporter-prometheus");
  const prometheus = new PrometheusExporter({ preventServerStart: true });
  const endpoint = await serveMetrics(prometheus, {
    host: settings.metricsHost ?? "127.0.0.1",
    port,
    ...(token !== undefined ? { token } : {}),
  }).catch((err: unknown) => {
    throw portError(err as Error, port);
  });
  const readers: IMetricReader[] = [prometheus];
  try {
    if (otlp) readers.push(await otlpMetricReader(env));
  } catch (err) {
    await endpoint.close();
    throw err;
  }
  return { metricReaders: readers, endpoint };
}

async function otlpMetricReader(env: NodeJS.ProcessEnv): Promise<IMetricReader> {
  const { PeriodicExportingMetricReader } = await import("@opentelemetry/sdk-metrics");
  const protocol =
    (env.OTEL_EXPORTER_OTLP_METRICS_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "").trim() || "http/protobuf";
  const exporter =
    protocol === "http/json"
      ? new (await import("@opentelemetry/exporter-metrics-otlp-http")).OTLPMetricExporter()
      : protocol === "grpc"
        ? new (await import("@opentelemetry/exporter-metrics-otlp-grpc")).OTLPMetricExporter()
        : new (await import("@opentelemetry/exporter-metrics-otlp-proto")).OTLPMetricExporter();
  const interval = positive(env.OTEL_METRIC_EXPORT_INTERVAL) ?? 60_000;
  const timeout = Math.min(positive(env.OTEL_METRIC_EXPORT_TIMEOUT) ?? 30_000, interval);
  return new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: interval, exportTimeoutMillis: timeout });
}

function positive(raw: string | undefined): number | undefined {
  const value = Number(raw);
  return raw !== undefined && raw.trim() !== "" && Number.isFinite(value) && value > 0 ? value : undefined;
}

function portError(err: Error, port: number): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") return new Error(`--metrics-port ${port} is already in use; pick another port`);
  return new Error(`--metrics-port ${port}: ${err.message}`);
}

const DIAG_LEVELS: Record<string, DiagLogLevel> = {
  none: DiagLogLevel.NONE,
  error: DiagLogLevel.ERROR,
  warn: DiagLogLevel.WARN,
  info: DiagLogLevel.INFO,
  debug: DiagLogLevel.DEBUG,
  verbose: DiagLogLevel.VERBOSE,
  all: DiagLogLevel.ALL,
};

function diagLevel(raw: string | undefined): DiagLogLevel {
  return DIAG_LEVELS[(raw ?? "").trim().toLowerCase()] ?? DiagLogLevel.WARN;
}

/** The SDK's diagnostics (e.g. an export that failed) as log lines `{"component":"opentelemetry",…}`. */
function diagToPino(logger: Logger): DiagLogger {
  const child = logger.child({ component: "opentelemetry" });
  const line =
    (level: "error" | "warn" | "info" | "debug" | "trace") =>
    (message: string, ...args: unknown[]) =>
      child[level](
        args.length > 0 ? { details: args.map((a) => (a instanceof Error ? a.message : String(a))) } : {},
        message,
      );
  return { error: line("error"), warn: line("warn"), info: line("info"), debug: line("debug"), verbose: line("trace") };
}
