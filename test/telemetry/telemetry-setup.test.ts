// When `agentd serve` turns telemetry on (flags and the standard OTEL_* variables),
// and the client's trace-context interceptor.
import { createRouterTransport, type ConnectRouter } from "@connectrpc/connect";
import { context, createTraceState, ROOT_CONTEXT, trace, TraceFlags } from "@opentelemetry/api";
import { createServer } from "node:net";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService, ListAgentsResponseSchema } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { create } from "@bufbuild/protobuf";
import { parseCommandLine, UsageError } from "../../src/cli/args.js";
import { otlpRequested, startTelemetry } from "../../src/cli/telemetry-setup.js";
import { createAgentClient, traceContextInterceptor } from "../../src/client/index.js";
import { registerCallerTracing } from "../harness/caller-trace.js";

const silent = pino({ level: "silent" });

describe("telemetry configuration", () => {
  it("exports by OTLP when --otel or an OTLP endpoint variable is set, unless OTEL_SDK_DISABLED", () => {
    expect(otlpRequested({}, {})).toBe(false);
    expect(otlpRequested({ otel: true }, {})).toBe(true);
    expect(otlpRequested({}, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(otlpRequested({}, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toBe(true);
    expect(otlpRequested({}, { OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toBe(false);
    expect(otlpRequested({ otel: true }, { OTEL_SDK_DISABLED: "true" })).toBe(false);
  });

  it("starts nothing when nothing asks for it", async () => {
    await expect(startTelemetry({}, silent, {})).resolves.toBeUndefined();
  });

  it("fails the start when the --metrics-port is taken, saying so", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      await expect(startTelemetry({ metricsPort: port, metricsHost: "127.0.0.1" }, silent, {})).rejects.toThrow(
        `--metrics-port ${port} is already in use; pick another port`,
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it("parses --otel and --metrics-port", () => {
    const serve = (argv: string[]) => {
      const command = parseCommandLine(["serve", ...argv], {});
      if (command.kind !== "serve") throw new Error("not serve");
      return command.config;
    };
    expect(serve([]).otel).toBeUndefined();
    expect(serve([]).metricsPort).toBeUndefined();
    expect(serve(["--otel", "--metrics-port", "9464"])).toMatchObject({ otel: true, metricsPort: 9464 });
    expect(() => serve(["--metrics-port", "0"])).toThrow(UsageError);
    expect(() => serve(["--metrics-port", "http"])).toThrow(/--metrics-port must be a whole number/);
  });
});

describe("traceContextInterceptor", () => {
  let unregister: () => Promise<void>;
  beforeAll(() => {
    unregister = registerCallerTracing();
  });
  afterAll(async () => {
    await unregister?.();
  });

  /** A client whose calls land in an in-memory router that records the request headers. */
  function recordingClient() {
    const seen: Headers[] = [];
    const transport = createRouterTransport(
      (router: ConnectRouter) =>
        router.service(AgentService, {
          listAgents: (_req, ctx) => {
            seen.push(ctx.requestHeader);
            return create(ListAgentsResponseSchema, {});
          },
        }),
      { transport: { interceptors: [traceContextInterceptor()] } },
    );
    return { client: createAgentClient("http://unused", { transport }), seen };
  }

  it("sends the active span's traceparent (and tracestate) on every call", async () => {
    const { client, seen } = recordingClient();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const spanId = "00f067aa0ba902b7";
    const traceState = createTraceState("vendor=opaque");
    const active = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED, traceState });
    await context.with(active, () => client.listAgents());
    expect(seen[0]!.get("traceparent")).toBe(`00-${traceId}-${spanId}-01`);
    expect(seen[0]!.get("tracestate")).toBe("vendor=opaque");
  });

  it("sends nothing outside a trace", async () => {
    const { client, seen } = recordingClient();
    await client.listAgents();
    expect(seen[0]!.get("traceparent")).toBeNull();
  });
});
