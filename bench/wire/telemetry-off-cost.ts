/**
 * What agentd's instrumentation costs a turn when telemetry is off (as in
 * `agentd serve` without OTEL_* / --otel / --metrics-port): runs, in this
 * process (which registers no SDK), what an invocation does per turn with
 * telemetry off — its InvocationTelemetry (turn bookkeeping, the model
 * wrapper that counts token usage for the wire, tool spans skipped) — around
 * an instant fake model, and the same model call bare, and returns the
 * difference per turn in microseconds (usage counting included, so an upper
 * bound). The RPC interceptor and the store wrapper are not installed at all
 * when telemetry is off.
 */
import { performance } from "node:perf_hooks";
import type { Model } from "../../src/models/model.js";
import { InvocationTelemetry } from "../../src/runtime/invocations/invocation-telemetry.js";

const INSTANT: Model = {
  name: "instant",
  generate: async () => ({
    message: { role: "model", content: [{ text: "ok" }] },
    finishReason: "stop",
    usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
  }),
};
const REQUEST = { messages: [] };

async function timed(turns: number, turn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < turns; i++) await turn();
  return performance.now() - t0;
}

/**
 * Microseconds of instrumentation per turn with telemetry off (median of
 * `rounds`), in invocations of `turnsPerInvocation` turns (the wire
 * benchmark's sessions have 20).
 */
export async function telemetryOffCostMicros(turns = 20_000, rounds = 5, turnsPerInvocation = 20): Promise<number> {
  const signal = new AbortController().signal;
  const bare = () => INSTANT.generate(REQUEST, { signal }).then(() => undefined);
  let telemetry = new InvocationTelemetry("bench", "session", false);
  let turnIndex = 0;
  const instrumented = async () => {
    if (turnIndex % turnsPerInvocation === 0) {
      telemetry.finish();
      telemetry = new InvocationTelemetry("bench", "session", false);
    }
    telemetry.beginTurn({ turnIndex: turnIndex++, snapshotId: "s" });
    const model = telemetry.model("instant", () => INSTANT);
    await telemetry.runInTurn(() => model.generate(REQUEST, { signal }));
    telemetry.endTurn("stop", "s");
  };
  const differences: number[] = [];
  await timed(turns, instrumented); // warm-up
  await timed(turns, bare);
  for (let r = 0; r < rounds; r++)
    differences.push(((await timed(turns, instrumented)) - (await timed(turns, bare))) / turns);
  differences.sort((a, b) => a - b);
  return differences[Math.floor(rounds / 2)]! * 1000;
}
