// agentd's OpenTelemetry building blocks, read through the SDK registered in this
// process with in-memory exporters: whether an SDK counts as registered, the
// instruments' names, units, help texts and buckets, and the spans `inSpan` makes.
import { SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import { DataPointType, type MetricData } from "@opentelemetry/sdk-metrics";
import { TracerProvider } from "@opentelemetry/sdk-trace";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import {
  agentdInstruments,
  definedAttributes,
  inSpan,
  recordFailure,
  telemetryRegistered,
} from "../../src/runtime/telemetry/telemetry.js";
import { registerInProcessTelemetry, type InProcessTelemetry } from "./in-process-telemetry.js";

let telemetry: InProcessTelemetry | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await telemetry?.stop();
  telemetry = undefined;
});

describe("telemetryRegistered", () => {
  it("is false when no SDK is registered", () => {
    expect(telemetryRegistered()).toBe(false);
  });

  it("is true when only a tracer provider is registered", () => {
    telemetry = registerInProcessTelemetry({ traces: true, metrics: false });
    expect(telemetryRegistered()).toBe(true);
  });

  it("is true when only a meter provider is registered", () => {
    telemetry = registerInProcessTelemetry({ traces: false, metrics: true });
    expect(telemetryRegistered()).toBe(true);
  });

  it("is true when the global tracer provider is not this API's proxy (another copy of the API registered it)", () => {
    vi.spyOn(trace, "getTracerProvider").mockReturnValue(new TracerProvider());
    expect(telemetryRegistered()).toBe(true);
  });
});

describe("agentdInstruments", () => {
  /** name -> [unit, description, histogram bucket boundaries (histograms only)]. */
  const EXPECTED: Record<string, [string, string, number[]?]> = {
    "rpc.server.call.duration": [
      "s",
      "Duration of RPCs served.",
      [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
    ],
    "agentd.turns": ["{turn}", "Turns finished, by agent and finish reason."],
    "agentd.turn.duration": [
      "s",
      "Duration of turns, by agent and finish reason.",
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    ],
    "agentd.invocations.active": ["{invocation}", "Invocations running in this process (detached ones included)."],
    "agentd.streams.open": ["{stream}", "Server-streaming and bidi calls open."],
    "agentd.detached.pending": ["{invocation}", "Detached invocations still running in this process."],
    "agentd.store.operation.duration": [
      "s",
      "Duration of session store operations.",
      [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    ],
    "agentd.tokens": ["{token}", "Model tokens, by agent, model and direction."],
    "agentd.tool.calls": [
      "{call}",
      "Tool calls, by tool and outcome (ran, replayed from the journal, refused as never-repeat).",
    ],
  };

  function described(metric: MetricData): [string, string, number[]?] {
    const { unit, description } = metric.descriptor;
    if (metric.dataPointType !== DataPointType.HISTOGRAM) return [unit, description];
    return [unit, description, metric.dataPoints[0]!.value.buckets.boundaries];
  }

  it("exports every instrument with its unit, its help text and (histograms) its advised buckets", async () => {
    telemetry = registerInProcessTelemetry();
    const instruments = agentdInstruments();
    instruments.rpcServerCallDuration.record(0.1);
    instruments.turns.add(1);
    instruments.turnDuration.record(1);
    instruments.invocationsActive.add(1);
    instruments.streamsOpen.add(1);
    instruments.detachedPending.add(1);
    instruments.storeOperationDuration.record(0.001);
    instruments.tokens.add(5);
    instruments.toolCalls.add(1);
    const exported = Object.fromEntries((await telemetry.metrics()).map((m) => [m.descriptor.name, described(m)]));
    expect(exported).toEqual(EXPECTED);
  });
});

describe("inSpan", () => {
  it("resolves with what the function resolves with, in an ended span that is not failed", async () => {
    telemetry = registerInProcessTelemetry();
    await expect(inSpan("work", { kind: SpanKind.INTERNAL }, async () => 42)).resolves.toBe(42);
    const [span, ...others] = telemetry.spans();
    expect(others).toEqual([]);
    expect(span!.name).toBe("work");
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("ends the span when the function throws, and rethrows the same error", async () => {
    telemetry = registerInProcessTelemetry();
    const thrown = new Error("boom");
    await expect(
      inSpan("work", {}, async () => {
        throw thrown;
      }),
    ).rejects.toBe(thrown);
    expect(telemetry.spans().map((s) => s.name)).toEqual(["work"]);
  });

  it("fails the span with the AgentError's status and message: status ERROR, an exception event, error.type", async () => {
    telemetry = registerInProcessTelemetry();
    await expect(
      inSpan("work", {}, async () => {
        throw new AgentError("NOT_FOUND", "no session s1");
      }),
    ).rejects.toThrow("no session s1");
    const [span] = telemetry.spans();
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: "no session s1" });
    expect(span!.attributes["error.type"]).toBe("NOT_FOUND");
    expect(span!.events.map((e) => [e.name, e.attributes])).toEqual([
      ["exception", { "exception.type": "NOT_FOUND", "exception.message": "no session s1" }],
    ]);
  });

  it("records any other thrown error as INTERNAL with its message", async () => {
    telemetry = registerInProcessTelemetry();
    await expect(
      inSpan("work", {}, async () => {
        throw new Error("disk on fire");
      }),
    ).rejects.toThrow("disk on fire");
    const [span] = telemetry.spans();
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: "disk on fire" });
    expect(span!.attributes["error.type"]).toBe("INTERNAL");
  });
});

describe("recordFailure", () => {
  it("leaves a span that is not recording (sampled out) untouched", () => {
    const touched: string[] = [];
    const record = (method: string) => () => {
      touched.push(method);
      return span;
    };
    const span = {
      isRecording: () => false,
      recordException: record("recordException"),
      setAttribute: record("setAttribute"),
      setStatus: record("setStatus"),
    } as unknown as Span;
    recordFailure(span, new AgentError("CANCELLED", "cancelled"));
    expect(touched).toEqual([]);
  });
});

describe("definedAttributes", () => {
  it("drops the undefined values and keeps every other one, falsy ones included", () => {
    const attributes = definedAttributes({ agent: "a", missing: undefined, index: 0, detached: false, reason: "" });
    expect(attributes).toStrictEqual({ agent: "a", index: 0, detached: false, reason: "" });
    expect(Object.keys(attributes)).not.toContain("missing");
  });
});
