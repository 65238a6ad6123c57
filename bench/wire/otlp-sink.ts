/**
 * A local OTLP/HTTP sink for `BENCH_TRACING=1`: accepts every export
 * (`POST /v1/traces`, `/v1/metrics`) on 127.0.0.1, answers 200 at once and
 * keeps only counts, so a traced agentd pays the whole cost of producing and
 * sending its telemetry and nothing waits on a collector.
 */
import { createServer } from "node:http";

/** A running sink. */
export interface OtlpSink {
  /** `http://127.0.0.1:<port>`, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string;
  /** Export requests and payload bytes received per path. */
  counts(): Record<string, { requests: number; bytes: number }>;
  close(): Promise<void>;
}

/** Starts a sink on a free port. */
export async function startOtlpSink(): Promise<OtlpSink> {
  const counts: Record<string, { requests: number; bytes: number }> = {};
  const server = createServer((req, res) => {
    const entry = (counts[req.url ?? ""] ??= { requests: 0, bytes: 0 });
    entry.requests++;
    req.on("data", (chunk: Buffer) => (entry.bytes += chunk.length));
    req.on("end", () => {
      res.writeHead(200, { "content-type": req.headers["content-type"] ?? "application/x-protobuf" });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    counts: () => structuredClone(counts),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
