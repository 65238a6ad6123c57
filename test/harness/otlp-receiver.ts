/**
 * A minimal OTLP/HTTP receiver for tests: accepts `POST /v1/traces` and
 * `POST /v1/metrics` (and `/v1/logs`, ignored) on 127.0.0.1, decodes each
 * payload — OTLP/JSON as JSON, OTLP/protobuf with the official OTLP protos
 * (test/fixtures/otlp-proto, from open-telemetry/opentelemetry-proto, compiled
 * by `buf build` and decoded by @bufbuild/protobuf's reflection) —
 * and keeps the spans and metric data points, flattened.
 */
import { execFileSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import { createFileRegistry, fromBinary, toJson, type DescMessage } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { REPO_ROOT } from "./agentd-process.js";

/** An attribute map, values as plain JS (ints as numbers, arrays as arrays). */
export type Attributes = Record<string, unknown>;

/** One received span. IDs are lowercase hex, as in W3C traceparent. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Attributes;
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
  events: { name: string; attributes: Attributes }[];
  links: { traceId: string; spanId: string }[];
  resource: Attributes;
  scope: string;
}

/** One data point of a received metric (the latest export last). */
export interface ReceivedPoint {
  metric: string;
  attributes: Attributes;
  /** Sum and gauge points: the value; histogram points: the count. */
  value: number;
  /** Histogram points: the sum. */
  sum?: number;
  resource: Attributes;
}

/** A running receiver. */
export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: the value of OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string;
  /** Every span received so far. */
  spans(): ReceivedSpan[];
  /** Every metric data point received so far, in arrival order. */
  points(): ReceivedPoint[];
  /** The content types of the payloads received (`application/json`, `application/x-protobuf`). */
  contentTypes(): string[];
  /** Polls `find` until it returns a value (or throws after `timeoutMs`, default 15 s). */
  waitFor<T>(find: () => T | undefined, what: string, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

const TRACE_REQUEST = "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest";
const METRICS_REQUEST = "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest";

/** The OTLP request messages, from the official protos (a buf image is a FileDescriptorSet). */
function otlpMessages(): { trace: DescMessage; metrics: DescMessage } {
  const image = execFileSync(`${REPO_ROOT}node_modules/.bin/buf`, ["build", "test/fixtures/otlp-proto", "-o", "-"], {
    cwd: REPO_ROOT,
  });
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, image));
  const trace = registry.getMessage(TRACE_REQUEST);
  const metrics = registry.getMessage(METRICS_REQUEST);
  if (!trace || !metrics) throw new Error("the OTLP protos did not load");
  return { trace, metrics };
}

/** Starts a receiver on a free port of 127.0.0.1. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const messages = otlpMessages();
  const spans: ReceivedSpan[] = [];
  const points: ReceivedPoint[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim();
      contentTypes.push(type);
      try {
        const protobuf = type === "application/x-protobuf";
        const decode = (schema: DescMessage) =>
          protobuf
            ? protoToOtlpJson(toJson(schema, fromBinary(schema, body), { enumAsInteger: true }))
            : JSON.parse(body.toString("utf8"));
        if (req.url === "/v1/traces") spans.push(...flattenSpans(decode(messages.trace)));
        else if (req.url === "/v1/metrics") points.push(...flattenPoints(decode(messages.metrics)));
        res.writeHead(200, { "content-type": protobuf ? "application/x-protobuf" : "application/json" });
        res.end(protobuf ? Buffer.alloc(0) : "{}");
      } catch (err) {
        res.writeHead(400, { "content-type": "text/plain" });
        res.end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...spans],
    points: () => [...points],
    contentTypes: () => [...contentTypes],
    waitFor: async (find, what, timeoutMs = 15_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = find();
        if (found !== undefined) return found;
        if (Date.now() > deadline)
          throw new Error(`no ${what} within ${timeoutMs} ms; spans: ${spans.map((s) => s.name).join(", ")}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Proto3 JSON of an OTLP request in OTLP/JSON's shape: trace and span IDs as hex instead of base64. */
function protoToOtlpJson(value: unknown, key = ""): unknown {
  if (typeof value === "string" && /^(traceId|spanId|parentSpanId)$/.test(key))
    return Buffer.from(value, "base64").toString("hex");
  if (Array.isArray(value)) return value.map((v) => protoToOtlpJson(v, key));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, protoToOtlpJson(v, k)]));
  return value;
}

/** An OTLP AnyValue as plain JS. */
function anyValue(value: any): unknown {
  if (!value) return undefined;
  if ("stringValue" in value) return value.stringValue;
  if ("boolValue" in value) return value.boolValue;
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return Number(value.doubleValue);
  if ("arrayValue" in value) return (value.arrayValue.values ?? []).map(anyValue);
  return undefined;
}

function attributesOf(list: any[] | undefined): Attributes {
  return Object.fromEntries((list ?? []).map((a) => [a.key, anyValue(a.value)]));
}

function flattenSpans(request: any): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs: any) =>
    (rs.scopeSpans ?? []).flatMap((ss: any) =>
      (ss.spans ?? []).map((s: any) => ({
        traceId: s.traceId ?? "",
        spanId: s.spanId ?? "",
        parentSpanId: s.parentSpanId ?? "",
        name: s.name,
        kind: Number(s.kind ?? 0),
        attributes: attributesOf(s.attributes),
        status: { code: Number(s.status?.code ?? 0), ...(s.status?.message ? { message: s.status.message } : {}) },
        events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
        links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId })),
        resource: attributesOf(rs.resource?.attributes),
        scope: ss.scope?.name ?? "",
      })),
    ),
  );
}

function flattenPoints(request: any): ReceivedPoint[] {
  return (request.resourceMetrics ?? []).flatMap((rm: any) =>
    (rm.scopeMetrics ?? []).flatMap((sm: any) =>
      (sm.metrics ?? []).flatMap((m: any) => {
        const resource = attributesOf(rm.resource?.attributes);
        const numeric = (m.sum ?? m.gauge)?.dataPoints ?? [];
        const histogram = m.histogram?.dataPoints ?? [];
        return [
          ...numeric.map((p: any) => ({
            metric: m.name,
            attributes: attributesOf(p.attributes),
            value: Number(p.asInt ?? p.asDouble ?? 0),
            resource,
          })),
          ...histogram.map((p: any) => ({
            metric: m.name,
            attributes: attributesOf(p.attributes),
            value: Number(p.count ?? 0),
            sum: Number(p.sum ?? 0),
            resource,
          })),
        ];
      }),
    ),
  );
}
