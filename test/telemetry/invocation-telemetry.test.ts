// One invocation's telemetry, in process against the OpenTelemetry SDK with
// in-memory exporters: the turn spans and their attributes, the detached span,
// the turn and invocation metrics, and the token usage counted with telemetry
// on or off.
import { context, SpanStatusCode, trace } from "@opentelemetry/api";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { EchoModel } from "../../src/models/echo-model.js";
import type { Model } from "../../src/models/model.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import { InvocationTelemetry } from "../../src/runtime/invocations/invocation-telemetry.js";
import { defineAgent } from "../../src/prompts/prompt-agent.js";
import * as names from "../../src/runtime/telemetry/telemetry-names.js";
import { generateWith, HELLO } from "../harness/model-calls.js";
import { registerInProcessTelemetry, type InProcessTelemetry, type RecordedPoint } from "./in-process-telemetry.js";

let otel: InProcessTelemetry;
let agentSeq = 0;
/** A fresh agent name per test: metrics are cumulative for the whole file. */
let agent: string;

beforeAll(() => {
  otel = registerInProcessTelemetry();
});
afterAll(async () => {
  await otel.stop();
});
beforeEach(() => {
  otel.resetSpans();
  agent = `agent-${++agentSeq}`;
});

async function pointsOf(metric: string): Promise<RecordedPoint[]> {
  return (await otel.points(metric)).filter((point) => point.attributes[names.ATTR_AGENT] === agent);
}

async function counted(metric: string): Promise<number | undefined> {
  const points = await pointsOf(metric);
  return points.length === 0 ? undefined : points.reduce((sum, point) => sum + (point.value as number), 0);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a turn with telemetry on", () => {
  it("is an agentd.turn span carrying the agent, session, turn index, snapshot ids and detached=false", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    telemetry.beginTurn({ turnIndex: 3, snapshotId: "snap-3", parentId: "snap-2" });
    telemetry.endTurn("stop", undefined);

    const [span] = otel.spansNamed(names.SPAN_TURN);
    expect(span?.attributes).toEqual({
      [names.ATTR_AGENT]: agent,
      [names.ATTR_GEN_AI_AGENT_NAME]: agent,
      [names.ATTR_SESSION_ID]: "s-1",
      [names.ATTR_GEN_AI_CONVERSATION_ID]: "s-1",
      [names.ATTR_TURN_INDEX]: 3,
      [names.ATTR_SNAPSHOT_ID]: "snap-3",
      [names.ATTR_PARENT_SNAPSHOT_ID]: "snap-2",
      [names.ATTR_DETACHED]: false,
      [names.ATTR_FINISH_REASON]: "stop",
    });
    expect(span?.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("takes the snapshot id the turn was committed as when it ends", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    telemetry.beginTurn({ turnIndex: 0 });
    telemetry.endTurn("length", "snap-final");
    const [span] = otel.spansNamed(names.SPAN_TURN);
    expect(span?.attributes[names.ATTR_SNAPSHOT_ID]).toBe("snap-final");
    expect(span?.attributes[names.ATTR_FINISH_REASON]).toBe("length");
    expect(span?.attributes).not.toHaveProperty(names.ATTR_PARENT_SNAPSHOT_ID);
  });

  it("records the turn's tokens on its span, and none when no model call reported usage", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    telemetry.beginTurn({ turnIndex: 0 });
    telemetry.addUsage({ inputTokens: 2, outputTokens: 5, totalTokens: 7 });
    telemetry.addUsage({ inputTokens: 1, outputTokens: 1, totalTokens: 2 });
    telemetry.endTurn("stop", "a");
    telemetry.beginTurn({ turnIndex: 1 });
    telemetry.endTurn("stop", "b");

    const [first, second] = otel.spansNamed(names.SPAN_TURN);
    expect(first?.attributes[names.ATTR_GEN_AI_USAGE_INPUT_TOKENS]).toBe(3);
    expect(first?.attributes[names.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]).toBe(6);
    expect(second?.attributes).not.toHaveProperty(names.ATTR_GEN_AI_USAGE_INPUT_TOKENS);
    expect(second?.attributes).not.toHaveProperty(names.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS);
  });

  it("counts agentd.turns and records agentd.turn.duration in seconds, by agent and finish reason", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    const before = performance.now();
    telemetry.beginTurn({ turnIndex: 0 });
    await sleep(30);
    telemetry.endTurn("stop", "a");
    const elapsedSeconds = (performance.now() - before) / 1000;

    const turns = await pointsOf(names.METRIC_TURNS);
    expect(turns).toEqual([
      { attributes: { [names.ATTR_AGENT]: agent, [names.ATTR_FINISH_REASON]: "stop" }, value: 1 },
    ]);
    const [duration] = await pointsOf(names.METRIC_TURN_DURATION);
    expect(duration?.attributes).toEqual({ [names.ATTR_AGENT]: agent, [names.ATTR_FINISH_REASON]: "stop" });
    const histogram = duration?.value as { count: number; sum: number };
    expect(histogram.count).toBe(1);
    expect(histogram.sum).toBeGreaterThanOrEqual(0.025);
    expect(histogram.sum).toBeLessThanOrEqual(elapsedSeconds);
  });

  it("ends once: a second endTurn or failTurn after the turn ended records nothing more", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    telemetry.beginTurn({ turnIndex: 0 });
    telemetry.endTurn("stop", "a");
    telemetry.endTurn("stop", "a");
    telemetry.failTurn(new Error("late"));
    expect(otel.spansNamed(names.SPAN_TURN)).toHaveLength(1);
    expect(await counted(names.METRIC_TURNS)).toBe(1);
  });

  it("runs the turn's work with its span active, so model, tool and store spans nest under it", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    telemetry.beginTurn({ turnIndex: 0 });
    const active = await telemetry.runInTurn(async () => trace.getActiveSpan());
    telemetry.endTurn("stop", "a");
    const [span] = otel.spansNamed(names.SPAN_TURN);
    expect(active?.spanContext().spanId).toBe(span?.spanContext().spanId);
  });

  it("is a child of the span active when the invocation started", async () => {
    const rpc = trace.getTracer("test").startSpan("rpc");
    const telemetry = context.with(
      trace.setSpan(context.active(), rpc),
      () => new InvocationTelemetry(agent, "s", true),
    );
    telemetry.beginTurn({ turnIndex: 0 });
    telemetry.endTurn("stop", "a");
    rpc.end();
    const [span] = otel.spansNamed(names.SPAN_TURN);
    expect(span?.spanContext().traceId).toBe(rpc.spanContext().traceId);
    expect(span?.parentSpanContext?.spanId).toBe(rpc.spanContext().spanId);
  });
});

describe("a failed turn", () => {
  it("ends its span with status ERROR, an exception event and error.type, and counts finish reason failed", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    telemetry.beginTurn({ turnIndex: 0 });
    telemetry.failTurn(new AgentError("UNAVAILABLE", "model is down"));

    const [span] = otel.spansNamed(names.SPAN_TURN);
    expect(span?.status).toEqual({ code: SpanStatusCode.ERROR, message: "model is down" });
    expect(span?.attributes[names.ATTR_ERROR_TYPE]).toBe("UNAVAILABLE");
    expect(span?.attributes[names.ATTR_FINISH_REASON]).toBe("failed");
    expect(span?.events.map((event) => event.name)).toEqual(["exception"]);
    expect(await pointsOf(names.METRIC_TURNS)).toEqual([
      { attributes: { [names.ATTR_AGENT]: agent, [names.ATTR_FINISH_REASON]: "failed" }, value: 1 },
    ]);
  });
});

describe("the invocation gauges", () => {
  it("count the invocation in agentd.invocations.active until it finishes, once however often finish is called", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    expect(await pointsOf(names.METRIC_INVOCATIONS_ACTIVE)).toEqual([
      { attributes: { [names.ATTR_AGENT]: agent }, value: 1 },
    ]);
    telemetry.finish();
    expect(await counted(names.METRIC_INVOCATIONS_ACTIVE)).toBe(0);
    telemetry.finish();
    expect(await counted(names.METRIC_INVOCATIONS_ACTIVE)).toBe(0);
  });
});

describe("a detached invocation", () => {
  it("runs later turns under an agentd.detached span linked to the span that detached it", async () => {
    const rpc = trace.getTracer("test").startSpan("rpc");
    const rpcContext = trace.setSpan(context.active(), rpc);
    const telemetry = context.with(rpcContext, () => new InvocationTelemetry(agent, "s-1", true));
    const detacher = trace.getTracer("test").startSpan("detach-call");
    context.with(trace.setSpan(context.active(), detacher), () => telemetry.detach());
    telemetry.beginTurn({ turnIndex: 1 });
    const inInvocation = telemetry.runInInvocation(() => trace.getActiveSpan());
    telemetry.endTurn("stop", "t1");
    telemetry.finish(undefined, "row-1");

    const [detached] = otel.spansNamed(names.SPAN_DETACHED);
    const [turn] = otel.spansNamed(names.SPAN_TURN);
    expect(detached?.attributes).toEqual({
      [names.ATTR_AGENT]: agent,
      [names.ATTR_SESSION_ID]: "s-1",
      [names.ATTR_SNAPSHOT_ID]: "row-1",
    });
    expect(detached?.parentSpanContext?.spanId).toBe(rpc.spanContext().spanId);
    expect(detached?.links.map((link) => link.context.spanId)).toEqual([detacher.spanContext().spanId]);
    expect(detached?.status.code).toBe(SpanStatusCode.UNSET);
    expect(turn?.attributes[names.ATTR_DETACHED]).toBe(true);
    expect(turn?.parentSpanContext?.spanId).toBe(detached?.spanContext().spanId);
    expect(inInvocation?.spanContext().spanId).toBe(detached?.spanContext().spanId);
  });

  it("has no link when nothing was active when it detached, and detaches once", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    telemetry.detach();
    telemetry.detach();
    telemetry.finish();
    const detached = otel.spansNamed(names.SPAN_DETACHED);
    expect(detached).toHaveLength(1);
    expect(detached[0]?.links).toEqual([]);
    expect(detached[0]?.attributes).not.toHaveProperty(names.ATTR_SNAPSHOT_ID);
  });

  it("is counted in agentd.detached.pending until it finishes", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    telemetry.detach();
    expect(await pointsOf(names.METRIC_DETACHED_PENDING)).toEqual([
      { attributes: { [names.ATTR_AGENT]: agent }, value: 1 },
    ]);
    expect(otel.spansNamed(names.SPAN_DETACHED)).toEqual([]);
    telemetry.finish();
    expect(await counted(names.METRIC_DETACHED_PENDING)).toBe(0);
    expect(await counted(names.METRIC_INVOCATIONS_ACTIVE)).toBe(0);
  });

  it("ends its span failed when the background work failed", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    telemetry.detach();
    telemetry.finish(new AgentError("DEADLINE_EXCEEDED", "took too long"), "row-9");
    const [detached] = otel.spansNamed(names.SPAN_DETACHED);
    expect(detached?.status).toEqual({ code: SpanStatusCode.ERROR, message: "took too long" });
    expect(detached?.attributes[names.ATTR_ERROR_TYPE]).toBe("DEADLINE_EXCEEDED");
  });
});

describe("token usage", () => {
  function countingResolver(): { resolve: (name: string) => Model; resolved: string[] } {
    const resolved: string[] = [];
    return {
      resolved,
      resolve: (name) => {
        resolved.push(name);
        return new EchoModel();
      },
    };
  }

  it.each([true, false])(
    "adds each model call's tokens to the turn and the invocation (telemetry on: %s)",
    async (enabled) => {
      const telemetry = new InvocationTelemetry(agent, "s-1", enabled);
      const { resolve } = countingResolver();
      expect(telemetry.usage).toBeUndefined();
      telemetry.beginTurn({ turnIndex: 0 });
      expect(telemetry.turnUsage).toBeUndefined();
      await generateWith(telemetry.model("echo", resolve), HELLO);
      await generateWith(telemetry.model("echo", resolve), HELLO);
      expect(telemetry.turnUsage).toEqual({ inputTokens: 2, outputTokens: 4, totalTokens: 6 });
      telemetry.endTurn("stop", "a");
      telemetry.beginTurn({ turnIndex: 1 });
      expect(telemetry.turnUsage).toBeUndefined();
      await generateWith(telemetry.model("echo", resolve), HELLO);
      expect(telemetry.turnUsage).toEqual({ inputTokens: 1, outputTokens: 2, totalTokens: 3 });
      expect(telemetry.usage).toEqual({ inputTokens: 3, outputTokens: 6, totalTokens: 9 });
    },
  );

  it("resolves a model name once per invocation and hands out the same wrapper", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", true);
    const { resolve, resolved } = countingResolver();
    const first = telemetry.model("echo", resolve);
    expect(telemetry.model("echo", resolve)).toBe(first);
    expect(telemetry.model("other", resolve)).not.toBe(first);
    expect(resolved).toEqual(["echo", "other"]);
  });
});

describe("telemetry off", () => {
  it("makes no span and records no metric, even with an SDK registered", async () => {
    const telemetry = new InvocationTelemetry(agent, "s-1", false);
    telemetry.beginTurn({ turnIndex: 0 });
    const active = await telemetry.runInTurn(async () => trace.getActiveSpan());
    telemetry.failTurn(new Error("x"));
    telemetry.beginTurn({ turnIndex: 1 });
    telemetry.endTurn("stop", "b");
    telemetry.detach();
    telemetry.finish(new Error("y"), "row");
    expect(active).toBeUndefined();
    expect(otel.spans()).toEqual([]);
    for (const metric of [names.METRIC_TURNS, names.METRIC_INVOCATIONS_ACTIVE, names.METRIC_DETACHED_PENDING]) {
      expect(await pointsOf(metric)).toEqual([]);
    }
  });
});

describe("an agent given a Model object rather than a model name", () => {
  it.each([true, false])(
    "counts the object's token usage and, with telemetry on, traces its calls (telemetry on: %s)",
    async (enabled) => {
      const registry = new AgentRegistry({ telemetry: enabled });
      const agent = defineAgent({ name: `model-object-${++agentSeq}`, model: new EchoModel() });
      registry.register(agent);
      const output = await agent.runText("hello there");
      expect(output.usage).toEqual({ inputTokens: 2, outputTokens: 3, totalTokens: 5 });
      const chats = otel.spans().filter((span) => span.name === `${names.GEN_AI_OPERATION_CHAT} echo`);
      expect(chats).toHaveLength(enabled ? 1 : 0);
    },
  );
});
