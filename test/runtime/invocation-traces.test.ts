// An invocation's OpenTelemetry spans and gauges, read from an SDK registered in this test
// process with in-memory exporters: an `agentd.turn` span per turn (ended with its finish
// reason and snapshot, failed as an error), an `agentd.detached` span for the background part
// (ended with the background row's ID), `agentd.invocations.active` back to zero once the
// invocation ended, and nothing at all when the registry turns telemetry off.
import { context, metrics, propagation, SpanStatusCode, trace } from "@opentelemetry/api";
import { MetricReader } from "@opentelemetry/sdk-metrics";
import { startNodeSdk } from "@opentelemetry/sdk-node";
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { harness, register, Rendezvous, replyTurn } from "./runtime-fixtures.js";
import { AgentError } from "../../src/errors/agent-error.js";
import * as names from "../../src/runtime/telemetry/telemetry-names.js";
import { messageText } from "../../src/types/content.js";

vi.setConfig({ testTimeout: 5_000 });

/** A metric reader the test collects from on demand. */
class CollectingReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

const exporter = new InMemorySpanExporter();
const reader = new CollectingReader();
let shutdown: () => Promise<void>;

beforeAll(() => {
  const sdk = startNodeSdk({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
    metricReaders: [reader],
    logRecordProcessors: [],
    resourceDetectors: [],
    logLevel: "none",
  });
  shutdown = async () => {
    await sdk.shutdown();
    context.disable();
    propagation.disable();
    trace.disable();
    metrics.disable();
  };
});
afterAll(async () => {
  await shutdown?.();
});

/** The finished spans named `name` of agent `agent`, in the order they ended. */
function spansOf(agent: string, name: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.name === name && s.attributes[names.ATTR_AGENT] === agent);
}

/** The current value of the up-down counter `name` for agent `agent` (0 when never recorded). */
async function gauge(name: string, agent: string): Promise<number> {
  const { resourceMetrics } = await reader.collect();
  const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  const point = metric?.dataPoints.find((p) => p.attributes[names.ATTR_AGENT] === agent);
  return (point?.value as number | undefined) ?? 0;
}

describe("an invocation's turn spans and gauges", () => {
  it("ends a span per turn with the turn's finish reason and snapshot", async () => {
    const { registry } = harness({ telemetry: true });
    const agent = register(registry, { name: "traced", store: "default", turn: replyTurn });
    const output = await agent.runText("hi");
    const [turn, ...more] = spansOf("traced", names.SPAN_TURN);
    expect(more).toEqual([]);
    expect(turn!.attributes).toMatchObject({
      [names.ATTR_TURN_INDEX]: 0,
      [names.ATTR_FINISH_REASON]: "stop",
      [names.ATTR_SNAPSHOT_ID]: output.snapshotId,
    });
    expect(turn!.status.code).not.toBe(SpanStatusCode.ERROR);
  });

  it("records nothing when the registry turns telemetry off, though an SDK is registered", async () => {
    const { registry } = harness({ telemetry: false });
    const agent = register(registry, { name: "untraced", store: "default", turn: replyTurn });
    await agent.runText("hi");
    expect(spansOf("untraced", names.SPAN_TURN)).toEqual([]);
    expect(await gauge(names.METRIC_INVOCATIONS_ACTIVE, "untraced")).toBe(0);
  });

  it("ends a failed turn's span as an error carrying the turn's error", async () => {
    const { registry } = harness({ telemetry: true });
    const agent = register(registry, {
      name: "failing",
      store: "default",
      turn: async () => {
        throw new AgentError("UNAVAILABLE", "model down");
      },
    });
    await agent.runText("hi");
    const [turn] = spansOf("failing", names.SPAN_TURN);
    expect(turn!.attributes).toMatchObject({
      [names.ATTR_FINISH_REASON]: "failed",
      [names.ATTR_ERROR_TYPE]: "UNAVAILABLE",
    });
    expect(turn!.status).toEqual({ code: SpanStatusCode.ERROR, message: "model down" });
  });

  it("counts an invocation as active while it runs, and no longer once it has ended", async () => {
    const { registry } = harness({ telemetry: true });
    const gate = new Rendezvous();
    const agent = register(registry, {
      name: "counted",
      store: "default",
      turn: async (input, ctx) => {
        await gate.at("turn", ctx.turn.signal);
        await replyTurn(input, ctx);
      },
    });
    const connection = await agent.connect();
    connection.sendText("hi");
    await gate.reached("turn");
    expect(await gauge(names.METRIC_INVOCATIONS_ACTIVE, "counted")).toBe(1);
    gate.release("turn");
    await connection.output();
    expect(await gauge(names.METRIC_INVOCATIONS_ACTIVE, "counted")).toBe(0);
  });

  it("runs the turns after detach under a detached span, ended with the background row's ID", async () => {
    const h = harness({ telemetry: true });
    const gate = new Rendezvous();
    const agent = register(h.registry, {
      name: "detached",
      store: "default",
      turn: async (input, ctx) => {
        if (messageText(input.message) === "wait") await gate.at("wait", ctx.turn.signal);
        await replyTurn(input, ctx);
      },
    });
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "wait" }] }, detach: true });
    const output = await connection.output();
    await gate.reached("wait");
    expect(await gauge(names.METRIC_DETACHED_PENDING, "detached")).toBe(1);
    gate.release("wait");
    expect(await h.registry.background.drain(4_000)).toBe(0);
    const [detached, ...more] = spansOf("detached", names.SPAN_DETACHED);
    expect(more).toEqual([]);
    expect(detached!.attributes[names.ATTR_SNAPSHOT_ID]).toBe(output.snapshotId);
    const [turn] = spansOf("detached", names.SPAN_TURN);
    expect(turn!.attributes[names.ATTR_DETACHED]).toBe(true);
    expect(turn!.parentSpanContext?.spanId).toBe(detached!.spanContext().spanId);
    expect(await gauge(names.METRIC_DETACHED_PENDING, "detached")).toBe(0);
    expect(await gauge(names.METRIC_INVOCATIONS_ACTIVE, "detached")).toBe(0);
  });
});
