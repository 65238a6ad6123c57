/**
 * History-budget benchmark (`npm run bench:history`): one in-process
 * conversation of 1,000 turns with a prompt agent on the scripted model and
 * the memory store, with a history policy (`history: { maxTokens: 1000 }`)
 * and without one (the baseline, same run). The scripted model is wrapped to
 * report usage as agentd's documented estimate (input: the characters of the
 * request's messages as JSON / 4, rounded up per message; output: the same
 * for the reply), so the numbers are the tokens a provider would be sent.
 * Prints the input tokens of turns 1, 10, 100 and 1000, ms per turn over
 * turns 1–10 and 991–1000, and the messages the last snapshot holds (the
 * full history either way). The two variants are interleaved over REPS
 * repetitions (default 3); medians and min–max spreads are printed, and the
 * ratios turn 1000 / turn 10. One uncounted short conversation warms the JIT.
 *
 * Then what a turn costs the runtime as the history grows, without the
 * model's own per-turn work on the history: a third variant, `plain`, the
 * prompt agent on the echo model (which reads only the last user message;
 * no history policy), interleaved with the others; median ms per turn over turns 1–100
 * and 901–1,000 and their ratio (flat is 1.0×; issue 49 asks ≤ 1.1×).
 * Not a test: nothing is asserted.
 */
import { performance } from "node:perf_hooks";
import { EchoModel } from "../src/models/echo-model.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import type { Model, ModelCallOptions, ModelRequest, ModelResponse } from "../src/models/model.js";
import { defineAgent } from "../src/prompts/prompt-agent.js";
import { AgentRegistry } from "../src/runtime/agents/agent-registry.js";
import { estimateTokens, type HistoryPolicy } from "../src/runtime/agents/history-policy.js";
import type { AgentStreamChunk } from "../src/types/agent-io.js";
import { userText } from "../src/types/content.js";
import { InMemorySessionStore } from "../stores/memory-store.js";
import type { SessionStore } from "../stores/snapshot-store.js";

const TURNS = Number(process.env.TURNS ?? 1000);
const REPS = Number(process.env.REPS ?? 3);
const POINTS = [1, 10, 100, 1000].filter((t) => t <= TURNS);
const POLICY: HistoryPolicy = { maxTokens: 1000 };
const TEXT = "lorem ipsum dolor sit amet ".repeat(4);

type Variant = "policy" | "none" | "plain";

/** The scripted model, reporting agentd's token estimate as its usage. */
function estimatingModel(): Model {
  const scripted = new ScriptedModel();
  return {
    name: "scripted-estimating",
    async generate(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse> {
      const response = await scripted.generate(request, options);
      const inputTokens = request.messages.reduce((n, m) => n + estimateTokens(m), 0);
      const outputTokens = estimateTokens(response.message);
      return { ...response, usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens } };
    },
  };
}

interface RunResult {
  inputTokensAt: number[];
  msFirst: number;
  msLast: number;
  /** Median ms per turn over turns 1–100 and over the last 100. */
  medianFirst100: number;
  medianLast100: number;
  messages: number;
}

async function conversation(variant: Variant, turns: number): Promise<RunResult> {
  const store = new InMemorySessionStore();
  const registry = new AgentRegistry({ defaultStore: store as SessionStore });
  const agent = defineAgent({
    name: `bench-${variant}`,
    model: variant === "plain" ? new EchoModel() : estimatingModel(),
    system: "Answer briefly.",
    store: "default",
    ...(variant === "policy" ? { history: POLICY } : {}),
  });
  registry.register(agent);
  const connection = await agent.connect();
  const ends: ((tokens: number) => void)[] = [];
  const reader = (async () => {
    for await (const chunk of connection.stream as AsyncIterable<AgentStreamChunk>)
      if (chunk.turnEnd) ends.shift()?.(chunk.turnEnd.usage?.inputTokens ?? 0);
  })();
  const tokens: number[] = [];
  const times: number[] = [];
  for (let turn = 1; turn <= turns; turn++) {
    const ended = new Promise<number>((resolve) => ends.push(resolve));
    const t0 = performance.now();
    connection.send({ message: userText(`turn ${turn}: ${TEXT}`) });
    tokens.push(await ended);
    times.push(performance.now() - t0);
  }
  const output = await connection.output();
  await reader;
  const snapshot = await agent.getSnapshot({ snapshotId: output.snapshotId! });
  await store.close();
  return {
    inputTokensAt: POINTS.map((t) => tokens[t - 1]!),
    msFirst: mean(times.slice(0, 10)),
    msLast: mean(times.slice(-10)),
    medianFirst100: median(times.slice(0, 100)),
    medianLast100: median(times.slice(-100)),
    messages: snapshot.state?.messages.length ?? 0,
  };
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function cell(values: number[], digits: number): string {
  const spread = `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
  return `${median(values).toFixed(digits)} [${spread}]`;
}

async function main(): Promise<void> {
  await conversation("policy", 20); // warm-up (JIT), not counted
  await conversation("none", 20);
  await conversation("plain", 20);
  const results = new Map<Variant, RunResult[]>([
    ["policy", []],
    ["none", []],
  ]);
  const plain: RunResult[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    for (const variant of ["policy", "none"] as const) results.get(variant)!.push(await conversation(variant, TURNS));
    plain.push(await conversation("plain", TURNS));
  }
  console.log(
    `bench:history — ${TURNS} turns in one invocation, scripted model, memory store, policy ${JSON.stringify(POLICY)} ` +
      `vs none; ${REPS} repetitions (interleaved); median [min–max]`,
  );
  console.log("\ninput tokens sent to the model per turn (agentd's estimate: JSON characters / 4)");
  console.log(`variant | ${POINTS.map((t) => `turn ${t}`.padEnd(22)).join(" | ")} | ratio turn ${POINTS.at(-1)}/10`);
  for (const [variant, runs] of results) {
    const cols = POINTS.map((_, p) =>
      cell(
        runs.map((r) => r.inputTokensAt[p]!),
        0,
      ).padEnd(22),
    );
    const last = POINTS.length - 1;
    const ratio = runs.map((r) => r.inputTokensAt[last]! / r.inputTokensAt[Math.min(1, last)]!);
    console.log(`${variant.padEnd(7)} | ${cols.join(" | ")} | ${cell(ratio, 2)}×`);
  }
  console.log("\nms per turn and the messages the last snapshot holds (the full history either way)");
  console.log("variant | turns 1–10            | last 10 turns         | ratio             | snapshot messages");
  for (const [variant, runs] of results) {
    const ratio = runs.map((r) => r.msLast / r.msFirst);
    console.log(
      `${variant.padEnd(7)} | ${cell(
        runs.map((r) => r.msFirst),
        3,
      ).padEnd(21)} | ${cell(
        runs.map((r) => r.msLast),
        3,
      ).padEnd(21)} | ${`${cell(ratio, 2)}×`.padEnd(17)} | ${median(runs.map((r) => r.messages))}`,
    );
  }
  const policy = results.get("policy")!;
  const none = results.get("none")!;
  const last = POINTS.length - 1;
  const saved = none.map((r, i) => r.inputTokensAt[last]! / policy[i]!.inputTokensAt[last]!);
  console.log(`\nturn ${POINTS[last]}: without a policy the model is sent ${cell(saved, 1)}× the tokens`);
  const span = Math.min(100, TURNS);
  console.log(
    `\nplain prompt agent (echo model, no policy): median ms per turn\n` +
      `turns 1–${span}           | turns ${TURNS - span + 1}–${TURNS}        | ratio last/first\n` +
      `${cell(
        plain.map((r) => r.medianFirst100),
        4,
      ).padEnd(22)} | ${cell(
        plain.map((r) => r.medianLast100),
        4,
      ).padEnd(22)} | ${cell(
        plain.map((r) => r.medianLast100 / r.medianFirst100),
        2,
      )}×`,
  );
}

await main();
