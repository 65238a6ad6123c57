/**
 * OpenTelemetry end to end: real `agentd serve` processes export OTLP/HTTP
 * (http/json, then http/protobuf) to a receiver in this test that decodes
 * the payloads, while the TS client sends calls carrying a caller's W3C trace
 * context (`traceContextInterceptor`). Checks the RPC server span under the
 * caller's trace, the turn span (agent, session, snapshots, turn index, finish
 * reason, detached) and its model, tool and store spans, a failed turn, detached
 * work, the metrics (`agentd.turns` by finish reason, durations, tokens), the
 * Prometheus text on `--metrics-port`, and the echo model's token usage on
 * TurnEnd, the output, GetSnapshot and GetSession. Last, the Go and Python
 * callers of test/fixtures/traced-callers (each sends one Run inside the
 * TRACEPARENT it is given, through its client's OpenTelemetry
 * instrumentation) find agentd's spans under their trace.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { context } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentClient, traceContextInterceptor, userText, type AgentClient } from "../../src/client/index.js";
import { REPO_ROOT, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { callerSpan, freePort, registerCallerTracing, type CallerSpan } from "../harness/caller-trace.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../harness/otlp-receiver.js";

const SERVER_KIND = 2;
const CLIENT_KIND = 3;
const STATUS_ERROR = 2;
/** Words no span attribute or event may carry (they are only in the user's messages). */
const SECRET_WORDS = "zebra quartz marmalade";

let unregister: () => Promise<void>;
beforeAll(() => {
  unregister = registerCallerTracing();
});
afterAll(async () => {
  await unregister?.();
});

/** Starts agentd exporting to a fresh receiver with `protocol`; stops both after the suite. */
function useTracedAgentd(protocol: "http/json" | "http/protobuf", extraArgs: string[] = []) {
  const fixture = {} as { receiver: OtlpReceiver; server: AgentdProcess; client: AgentClient; metricsPort: number };
  beforeAll(async () => {
    fixture.receiver = await startOtlpReceiver();
    fixture.metricsPort = await freePort();
    fixture.server = await startAgentd({
      args: [
        "test/fixtures/agents.ts",
        "test/fixtures/prompt-agents.ts",
        "--metrics-port",
        String(fixture.metricsPort),
        ...extraArgs,
      ],
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: fixture.receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_SERVICE_NAME: "agentd-e2e",
        OTEL_TRACES_SAMPLER: "parentbased_always_on",
        OTEL_BSP_SCHEDULE_DELAY: "50",
        OTEL_METRIC_EXPORT_INTERVAL: "300",
        OTEL_METRIC_EXPORT_TIMEOUT: "250",
      },
    });
    fixture.client = createAgentClient(fixture.server.baseUrl, {
      protocol: "grpc",
      interceptors: [traceContextInterceptor()],
    });
  });
  afterAll(async () => {
    await fixture.server?.stop();
    await fixture.receiver?.close();
  });
  return fixture;
}

/** Calls `fn` with `caller` as the active span (so the client's interceptor sends its traceparent). */
function asCaller<T>(caller: CallerSpan, fn: () => T): T {
  return context.with(caller.context, fn);
}

function spansOf(receiver: OtlpReceiver, traceId: string): ReceivedSpan[] {
  return receiver.spans().filter((s) => s.traceId === traceId);
}

/** Waits for a span of the trace matching `predicate`. */
function waitForSpan(
  receiver: OtlpReceiver,
  traceId: string,
  what: string,
  predicate: (s: ReceivedSpan) => boolean,
): Promise<ReceivedSpan> {
  return receiver.waitFor(() => spansOf(receiver, traceId).find(predicate), `${what} in trace ${traceId}`);
}

/** The latest exported value of `metric` for data points whose attributes include `attributes`. */
function latestPoint(receiver: OtlpReceiver, metric: string, attributes: Record<string, unknown>) {
  return receiver
    .points()
    .filter((p) => p.metric === metric && Object.entries(attributes).every(([k, v]) => p.attributes[k] === v))
    .at(-1);
}

describe("telemetry over OTLP/HTTP JSON", () => {
  const agentd = useTracedAgentd("http/json");

  it("puts the RPC span, the turn span and its model and store spans under the caller's trace", async () => {
    const caller = callerSpan();
    const run = asCaller(caller, () => agentd.client.runStream("assistant", `hello ${SECRET_WORDS}`));
    const chunks = [];
    for await (const chunk of run) chunks.push(chunk);
    const output = await run;
    const turnEnd = chunks.find((c) => c.turnEnd)!.turnEnd!;
    const { receiver } = agentd;

    const rpc = await waitForSpan(
      receiver,
      caller.traceId,
      "the RunStream server span",
      (s) => s.name === "agentd.v1.AgentService/RunStream",
    );
    expect(rpc.kind).toBe(SERVER_KIND);
    expect(rpc.parentSpanId).toBe(caller.spanId);
    expect(rpc.attributes).toMatchObject({
      "rpc.system": "grpc",
      "rpc.service": "agentd.v1.AgentService",
      "rpc.method": "RunStream",
      "rpc.grpc.status_code": 0,
      "rpc.status_code": "OK",
      "agentd.agent": "assistant",
      "agentd.session.id": output.sessionId,
    });
    expect(rpc.resource["service.name"]).toBe("agentd-e2e");
    expect(rpc.resource["process.command_args"]).toBeUndefined(); // a --store URI may hold a password
    const line = await agentd.server.logLine((l) => l.msg === "rpc" && l.traceId === caller.traceId);
    expect(line).toMatchObject({ procedure: "/agentd.v1.AgentService/RunStream", code: "OK" }); // logs and traces correlate

    const turn = await waitForSpan(receiver, caller.traceId, "the turn span", (s) => s.name === "agentd.turn");
    expect(turn.parentSpanId).toBe(rpc.spanId);
    expect(turn.attributes).toMatchObject({
      "agentd.agent": "assistant",
      "agentd.session.id": output.sessionId,
      "agentd.snapshot.id": turnEnd.snapshotId,
      "agentd.turn.index": 0,
      "agentd.finish_reason": "stop",
      "agentd.detached": false,
      "gen_ai.usage.input_tokens": 4,
      "gen_ai.usage.output_tokens": 5,
    });
    expect(turn.attributes["agentd.snapshot.parent_id"]).toBeUndefined();

    const model = await waitForSpan(receiver, caller.traceId, "the model span", (s) => s.name === "chat echo");
    expect(model.kind).toBe(CLIENT_KIND);
    expect(model.parentSpanId).toBe(turn.spanId);
    expect(model.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "echo",
      "gen_ai.usage.input_tokens": 4,
      "gen_ai.usage.output_tokens": 5,
      "gen_ai.response.finish_reasons": ["stop"],
    });

    const commit = await waitForSpan(
      receiver,
      caller.traceId,
      "the commit store span",
      (s) => s.name === "agentd.store commit" && s.parentSpanId === turn.spanId,
    );
    expect(commit.attributes).toMatchObject({ "agentd.store": "memory", "agentd.store.operation": "commit" });

    for (const span of spansOf(receiver, caller.traceId)) {
      const text = JSON.stringify([span.attributes, span.events]);
      for (const word of SECRET_WORDS.split(" ")) expect(text, `${span.name} carries message text`).not.toContain(word);
    }
  });

  it("continues the session's trace per call: a second turn's span names its parent snapshot", async () => {
    const first = await agentd.client.run("assistant", "one");
    const caller = callerSpan();
    const second = await asCaller(caller, () => agentd.client.run("assistant", "two", { sessionId: first.sessionId }));
    const turn = await waitForSpan(agentd.receiver, caller.traceId, "the turn span", (s) => s.name === "agentd.turn");
    expect(turn.attributes).toMatchObject({
      "agentd.turn.index": 1,
      "agentd.snapshot.id": second.snapshotId,
      "agentd.snapshot.parent_id": first.snapshotId,
    });
  });

  it("reports the echo model's token counts on TurnEnd, the output, the snapshot and the session's running totals", async () => {
    // Echo usage: input = words of the last user message, output = words of "echo: <text>".
    const conversation = agentd.client.chat("assistant");
    const firstTurn = await conversation.send("hello traced");
    const secondTurn = await conversation.send("three more words");
    const output = await conversation.output();
    expect(firstTurn.usage).toEqual({ inputTokens: 2, outputTokens: 3, totalTokens: 5 });
    expect(secondTurn.usage).toEqual({ inputTokens: 3, outputTokens: 4, totalTokens: 7 });
    expect(output.usage).toEqual({ inputTokens: 5, outputTokens: 7, totalTokens: 12 });

    const snapshot = await agentd.client.getSnapshot("assistant", { sessionId: output.sessionId });
    expect(snapshot.usage).toEqual({ inputTokens: 3, outputTokens: 4, totalTokens: 7 });
    const session = await agentd.client.getSession(output.sessionId);
    expect(session.usage).toEqual({ inputTokens: 5, outputTokens: 7, totalTokens: 12 });

    const again = await agentd.client.run("assistant", "four", { sessionId: output.sessionId });
    expect(again.usage).toEqual({ inputTokens: 1, outputTokens: 2, totalTokens: 3 });
    expect((await agentd.client.getSession(output.sessionId)).usage).toEqual({
      inputTokens: 6,
      outputTokens: 9,
      totalTokens: 15,
    });
  });

  it("records a failed turn on its span (status ERROR, exception event) and counts turns by finish reason", async () => {
    const caller = callerSpan();
    const failed = await asCaller(caller, () => agentd.client.run("flaky", "please fail now"));
    expect(failed.finishReason).toBe("failed");
    const turn = await waitForSpan(
      agentd.receiver,
      caller.traceId,
      "the failed turn span",
      (s) => s.name === "agentd.turn",
    );
    expect(turn.status.code).toBe(STATUS_ERROR);
    expect(turn.attributes).toMatchObject({
      "agentd.agent": "flaky",
      "agentd.finish_reason": "failed",
      "error.type": "INTERNAL",
    });
    const exception = turn.events.find((e) => e.name === "exception");
    expect(exception?.attributes).toMatchObject({
      "exception.type": "INTERNAL",
      "exception.message": "flaky agent failed on purpose",
    });

    await agentd.client.run("flaky", "fine");
    const { receiver } = agentd;
    const stop = await receiver.waitFor(() => {
      const p = latestPoint(receiver, "agentd.turns", { "agentd.agent": "flaky", "agentd.finish_reason": "stop" });
      return p && p.value >= 1 ? p : undefined;
    }, "agentd.turns{flaky, stop}");
    expect(stop.value).toBe(1);
    expect(
      latestPoint(receiver, "agentd.turns", { "agentd.agent": "flaky", "agentd.finish_reason": "failed" })?.value,
    ).toBe(1);
    const durations = await receiver.waitFor(
      () => latestPoint(receiver, "agentd.turn.duration", { "agentd.agent": "flaky" }),
      "agentd.turn.duration",
    );
    expect(durations.value).toBeGreaterThanOrEqual(1);
    const rpc = await receiver.waitFor(
      () => latestPoint(receiver, "rpc.server.call.duration", { "rpc.method": "Run", "rpc.status_code": "OK" }),
      "rpc.server.call.duration{Run, OK}",
    );
    expect(rpc.attributes).toMatchObject({ "rpc.system": "grpc", "rpc.service": "agentd.v1.AgentService" });
    const input = await receiver.waitFor(
      () =>
        latestPoint(receiver, "agentd.tokens", {
          "agentd.agent": "flaky",
          "gen_ai.request.model": "echo",
          "gen_ai.token.type": "input",
        }),
      "agentd.tokens{flaky, input}",
    );
    expect(input.value).toBe(1); // "fine": one word
    expect(
      latestPoint(receiver, "agentd.store.operation.duration", {
        "agentd.store": "memory",
        "agentd.store.operation": "commit",
      }),
    ).toBeDefined();
    expect(latestPoint(receiver, "agentd.invocations.active", { "agentd.agent": "flaky" })?.value).toBe(0);
  });

  it("gives each tool call a span under the turn", async () => {
    const caller = callerSpan();
    const output = await asCaller(caller, () => agentd.client.run("shopper", 'call add_item {"item":"milk"}'));
    expect(output.finishReason).toBe("stop");
    const turn = await waitForSpan(agentd.receiver, caller.traceId, "the turn span", (s) => s.name === "agentd.turn");
    const tool = await waitForSpan(
      agentd.receiver,
      caller.traceId,
      "the tool span",
      (s) => s.name === "execute_tool add_item",
    );
    expect(tool.parentSpanId).toBe(turn.spanId);
    expect(tool.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add_item" });
    expect(String(tool.attributes["gen_ai.tool.call.id"])).toMatch(/^call-/);
    const models = spansOf(agentd.receiver, caller.traceId).filter((s) => s.name === "chat scripted");
    expect(models.length).toBe(2);
    for (const m of models) expect(m.parentSpanId).toBe(turn.spanId);
  });

  it("keeps detached work in the caller's trace, linked to the span that detached it", async () => {
    const caller = callerSpan();
    const output = await asCaller(caller, () =>
      agentd.client.run("assistant", { message: userText("in the background", { echoDelayMs: 20 }), detach: true }),
    );
    expect(output.finishReason).toBe("detached");
    const { receiver } = agentd;
    const rpc = await waitForSpan(
      receiver,
      caller.traceId,
      "the Run span",
      (s) => s.name === "agentd.v1.AgentService/Run",
    );
    const detached = await waitForSpan(
      receiver,
      caller.traceId,
      "the detached span",
      (s) => s.name === "agentd.detached",
    );
    expect(detached.parentSpanId).toBe(rpc.spanId);
    expect(detached.links).toContainEqual({ traceId: caller.traceId, spanId: rpc.spanId });
    expect(detached.attributes["agentd.snapshot.id"]).toBe(output.snapshotId);
    const turn = await waitForSpan(
      receiver,
      caller.traceId,
      "the background turn span",
      (s) => s.name === "agentd.turn",
    );
    expect(turn.parentSpanId).toBe(detached.spanId);
    expect(turn.attributes).toMatchObject({ "agentd.detached": true, "agentd.finish_reason": "stop" });
    const snapshot = await agentd.client.getSnapshot("assistant", { snapshotId: output.snapshotId! });
    expect(snapshot.status).toBe("completed");
    expect(snapshot.usage).toEqual({ inputTokens: 3, outputTokens: 4, totalTokens: 7 });
    expect((await agentd.client.getSession(output.sessionId)).usage).toEqual({
      inputTokens: 3,
      outputTokens: 4,
      totalTokens: 7,
    });
  });

  it("serves the metrics as Prometheus text on --metrics-port", async () => {
    await agentd.client.run("assistant", "for prometheus");
    const text = await (await fetch(`http://127.0.0.1:${agentd.metricsPort}/metrics`)).text();
    expect(text).toMatch(
      /^agentd_turns(_total)?\{[^}]*agentd_agent="assistant"[^}]*agentd_finish_reason="stop"[^}]*\} \d+/m,
    );
    expect(text).toMatch(/^rpc_server_call_duration(_seconds)?_bucket\{/m);
    expect(text).toMatch(/^agentd_tokens(_total)?\{/m);
    expect(agentd.server.listening.telemetry).toEqual({
      otlp: true,
      prometheus: `http://127.0.0.1:${agentd.metricsPort}/metrics`,
    });
  });

  it("sends the payloads as OTLP/JSON", () => {
    expect(new Set(agentd.receiver.contentTypes())).toEqual(new Set(["application/json"]));
  });
});

describe("telemetry over OTLP/HTTP protobuf", () => {
  const agentd = useTracedAgentd("http/protobuf");

  it("exports the same spans and metrics", async () => {
    const caller = callerSpan();
    const output = await asCaller(caller, () => agentd.client.run("assistant", "hello traced"));
    expect(output.usage).toEqual({ inputTokens: 2, outputTokens: 3, totalTokens: 5 });
    const { receiver } = agentd;
    const rpc = await waitForSpan(
      receiver,
      caller.traceId,
      "the Run span",
      (s) => s.name === "agentd.v1.AgentService/Run",
    );
    expect(rpc.parentSpanId).toBe(caller.spanId);
    expect(rpc.attributes).toMatchObject({ "rpc.system": "grpc", "rpc.method": "Run", "rpc.grpc.status_code": 0 });
    const turn = await waitForSpan(receiver, caller.traceId, "the turn span", (s) => s.name === "agentd.turn");
    expect(turn.parentSpanId).toBe(rpc.spanId);
    expect(turn.attributes).toMatchObject({
      "agentd.session.id": output.sessionId,
      "agentd.snapshot.id": output.snapshotId,
    });
    const turns = await receiver.waitFor(
      () => latestPoint(receiver, "agentd.turns", { "agentd.agent": "assistant", "agentd.finish_reason": "stop" }),
      "agentd.turns{assistant, stop}",
    );
    expect(turns.value).toBe(1);
    expect(new Set(receiver.contentTypes())).toEqual(new Set(["application/x-protobuf"]));
  });

  it("marks Connect calls rpc.system connect_rpc, with the Connect error code on failure", async () => {
    const connect = createAgentClient(agentd.server.baseUrl, {
      protocol: "connect",
      interceptors: [traceContextInterceptor()],
    });
    const caller = callerSpan();
    await expect(asCaller(caller, () => connect.run("no-such-agent", "hi"))).rejects.toThrow(/unknown agent/);
    const rpc = await waitForSpan(
      agentd.receiver,
      caller.traceId,
      "the failed Run span",
      (s) => s.name === "agentd.v1.AgentService/Run",
    );
    expect(rpc.attributes).toMatchObject({
      "rpc.system": "connect_rpc",
      "rpc.status_code": "NOT_FOUND",
      "rpc.connect_rpc.error_code": "not_found",
      "error.type": "NOT_FOUND",
    });
    expect(rpc.status.code).not.toBe(STATUS_ERROR); // a caller's mistake, not a server fault
  });
});

/** The caller programs of test/fixtures/traced-callers: each prints one JSON line about its Run. */
const TRACED_CALLERS = [
  {
    language: "go",
    command: "go",
    args: ["-C", "test/fixtures/traced-callers/go", "run", "."],
  },
  {
    language: "python",
    command: join(REPO_ROOT, ".tools/venv/bin/python"),
    args: ["test/fixtures/traced-callers/python/traced_run.py"],
  },
];

/** What a traced caller prints. */
interface CallerReport {
  text: string;
  traceId: string;
  clientSpanId: string;
  sessionId: string;
  snapshotId: string;
  finishReason: string;
}

function runCaller(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<CallerReport> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd: REPO_ROOT, env: { ...process.env, ...env }, timeout: 240_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${command} ${args.join(" ")} failed: ${err.message}\n${stdout}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split("\n").at(-1)!) as CallerReport);
      },
    );
  });
}

describe("traced callers in Go and Python", () => {
  const agentd = useTracedAgentd("http/protobuf");

  for (const caller of TRACED_CALLERS) {
    it(`${caller.language}: agentd's spans are under the caller's trace`, { timeout: 300_000 }, async () => {
      const parent = callerSpan();
      const report = await runCaller(caller.command, caller.args, {
        AGENTD_URL: agentd.server.baseUrl,
        TRACEPARENT: parent.traceparent,
      });
      expect(report).toMatchObject({
        text: "echo: hello traced",
        traceId: parent.traceId,
        finishReason: "FINISH_REASON_STOP",
      });
      const { receiver } = agentd;
      const rpc = await waitForSpan(
        receiver,
        parent.traceId,
        "agentd's Run span",
        (s) => s.name === "agentd.v1.AgentService/Run",
      );
      expect(rpc.kind).toBe(SERVER_KIND);
      expect(rpc.parentSpanId).toBe(report.clientSpanId); // the caller's client span, made by its instrumentation
      expect(["grpc", "connect_rpc"]).toContain(rpc.attributes["rpc.system"]);
      expect(rpc.attributes).toMatchObject({
        "rpc.method": "Run",
        "rpc.status_code": "OK",
        "agentd.session.id": report.sessionId,
      });
      const turn = await waitForSpan(receiver, parent.traceId, "the turn span", (s) => s.name === "agentd.turn");
      expect(turn.parentSpanId).toBe(rpc.spanId);
      expect(turn.attributes).toMatchObject({
        "agentd.agent": "assistant",
        "agentd.snapshot.id": report.snapshotId,
        "gen_ai.usage.input_tokens": 2,
      });
      const model = await waitForSpan(receiver, parent.traceId, "the model span", (s) => s.name === "chat echo");
      expect(model.parentSpanId).toBe(turn.spanId);
    });
  }
});
