/**
 * Turn-cost benchmark (`npm run bench:turns`): one in-process conversation of
 * 1,000 turns (echo model, one ~270-byte user message per turn, custom state
 * and an artifact updated every turn) on the memory, SQLite and MongoDB stores
 * (mongo-java-server, or MONGODB_URI when set). For each store it prints
 * ms/turn at turns 1–10, 91–100 and 991–1000 (the baseline is the same
 * workload at turns 1–10, measured in the same run), and the bytes written
 * per turn at turns 10, 100 and 1000 — the record of that turn, and the
 * amortized average over turns 1..N (every record written, checkpoints
 * included).
 * One uncounted memory-store conversation warms the JIT first. Stores are
 * interleaved across REPS repetitions (default 3); medians and the
 * min–max spread are printed. BENCH_STORES=memory,sqlite limits the stores.
 * Not a test: nothing is asserted.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { BSON } from "mongodb";
import { z } from "zod";
import { defineCustomAgent } from "../src/runtime/agents/custom-agent.js";
import { AgentRegistry } from "../src/runtime/agents/agent-registry.js";
import { generateModelTurn } from "../src/runtime/agents/model-turn.js";
import type { AgentStreamChunk } from "../src/types/agent-io.js";
import { userText } from "../src/types/content.js";
import { openSqlStore } from "../stores/sql/sql-store-uri.js";
import { InMemorySessionStore } from "../stores/memory-store.js";
import { MongoSessionStore } from "../stores/mongodb/mongo-store.js";
import type { HeadCommit, SessionStore, SnapshotRecord } from "../stores/snapshot-store.js";
import { mongoForTests } from "../test/harness/mongo-java-server.js";

type Kind = "memory" | "sqlite" | "mongodb";
const KINDS = (process.env.BENCH_STORES ?? "memory,sqlite,mongodb").split(",") as Kind[];
const TURNS = 1000;
const REPS = Number(process.env.REPS ?? 3);
const WINDOWS: [number, number][] = [
  [1, 10],
  [91, 100],
  [991, 1000],
];
const BYTE_POINTS = [10, 100, 1000];
const TEXT = "lorem ipsum dolor sit amet ".repeat(10);

interface Counting {
  store: SessionStore<Notes>;
  /** Bytes of every record written, by turn index (0-based), as the store serializes it. */
  bytesByTurn: Map<number, number>;
  dispose(): Promise<void>;
}

interface Notes {
  count: number;
  last: string;
}

/** Wraps a store so each committed record's serialized size is counted (JSON for memory/SQLite, BSON for MongoDB). */
function counting(store: SessionStore<Notes>, kind: Kind, dispose: () => Promise<void>): Counting {
  const bytesByTurn = new Map<number, number>();
  const size = (record: SnapshotRecord<Notes>): number =>
    kind === "mongodb"
      ? BSON.calculateObjectSize(JSON.parse(JSON.stringify(record)) as BSON.Document)
      : Buffer.byteLength(JSON.stringify(record));
  const wrapped: SessionStore<Notes> = Object.create(store) as SessionStore<Notes>;
  wrapped.commit = async (commit: HeadCommit<Notes>, ctx) => {
    if (commit.record) bytesByTurn.set(commit.record.turnIndex, size(commit.record));
    return store.commit(commit, ctx);
  };
  return { store: wrapped, bytesByTurn, dispose };
}

async function open(kind: Kind, mongoUri: string | undefined): Promise<Counting> {
  if (kind === "memory") {
    const store = new InMemorySessionStore<Notes>();
    return counting(store, kind, () => store.close());
  }
  if (kind === "sqlite") {
    const dir = await mkdtemp(join(tmpdir(), "agentd-bench-turns-"));
    const store = (await openSqlStore(`sqlite:${join(dir, "agentd.db")}`)) as unknown as SessionStore<Notes>;
    return counting(store, kind, async () => {
      await store.close?.();
      await rm(dir, { recursive: true, force: true });
    });
  }
  const store = new MongoSessionStore<Notes>({
    uri: mongoUri!,
    database: "agentd_bench",
    collectionPrefix: `turns${randomBytes(4).toString("hex")}_`,
  });
  return counting(store, kind, () => store.close());
}

interface RunResult {
  msPerTurn: number[];
  bytesAt: number[];
  avgBytesAt: number[];
}

/** One 1,000-turn conversation over one invocation (as a Chat stream would drive it). */
async function conversation(kind: Kind, mongoUri: string | undefined): Promise<RunResult> {
  const opened = await open(kind, mongoUri);
  const registry = new AgentRegistry({ defaultStore: opened.store as SessionStore });
  const agent = defineCustomAgent<Notes>({
    name: "bench",
    store: "default",
    stateSchema: z.object({ count: z.number(), last: z.string() }),
    turn: async (input, ctx) => {
      const text = input.message?.content[0]?.text ?? "";
      ctx.session.updateCustom((n) => ({ count: (n?.count ?? 0) + 1, last: text.slice(0, 20) }));
      ctx.responder.sendArtifact({ name: "last.txt", parts: [{ text: text.slice(0, 40) }] });
      return generateModelTurn(ctx, "echo");
    },
  });
  registry.register(agent);
  const connection = await agent.connect();
  const turnEnds: (() => void)[] = [];
  const reader = (async () => {
    for await (const chunk of connection.stream as AsyncIterable<AgentStreamChunk>)
      if (chunk.turnEnd) turnEnds.shift()?.();
  })();
  const times: number[] = [];
  for (let turn = 1; turn <= TURNS; turn++) {
    const ended = new Promise<void>((resolve) => turnEnds.push(resolve));
    const t0 = performance.now();
    connection.send({ message: userText(`turn ${turn}: ${TEXT}`) });
    await ended;
    times.push(performance.now() - t0);
  }
  await connection.output();
  await reader;
  const msPerTurn = WINDOWS.map(([from, to]) => mean(times.slice(from - 1, to)));
  const bytesAt = BYTE_POINTS.map((turn) => opened.bytesByTurn.get(turn - 1) ?? 0);
  const avgBytesAt = BYTE_POINTS.map((turn) => {
    let sum = 0;
    for (let t = 1; t <= turn; t++) sum += opened.bytesByTurn.get(t - 1) ?? 0;
    return sum / turn;
  });
  await opened.dispose();
  return { msPerTurn, bytesAt, avgBytesAt };
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function spread(values: number[], digits: number): string {
  return `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
}

async function main(): Promise<void> {
  const mongo = KINDS.includes("mongodb") ? await mongoForTests() : { uri: undefined, stop: async () => {} };
  const results = new Map<Kind, RunResult[]>(KINDS.map((k) => [k, []]));
  try {
    await conversation("memory", undefined); // warm-up (JIT), not counted
    for (let rep = 0; rep < REPS; rep++) {
      for (const kind of KINDS) results.get(kind)!.push(await conversation(kind, mongo.uri));
    }
  } finally {
    await mongo.stop();
  }
  console.log(
    `bench:turns — ${TURNS} turns in one invocation, echo model, ${REPS} repetitions (interleaved); median [min–max]`,
  );
  console.log("\nms per turn (ratio = window / turns 1–10 of the same store)");
  console.log("store    | turns 1–10          | turns 91–100        | turns 991–1000      | ratio 991–1000");
  for (const kind of KINDS) {
    const runs = results.get(kind)!;
    const cols = WINDOWS.map((_, w) => {
      const v = runs.map((r) => r.msPerTurn[w]!);
      return `${median(v).toFixed(3)} [${spread(v, 3)}]`.padEnd(19);
    });
    const ratios = runs.map((r) => r.msPerTurn[2]! / r.msPerTurn[0]!);
    console.log(`${kind.padEnd(8)} | ${cols.join(" | ")} | ${median(ratios).toFixed(2)}× [${spread(ratios, 2)}]`);
  }
  console.log(
    "\nbytes written per turn: that turn's record / amortized over turns 1..N, checkpoints included (ratios = turn 1000 / turn 10)",
  );
  console.log("store    | turn 10         | turn 100        | turn 1000       | ratio (record) | ratio (amortized)");
  for (const kind of KINDS) {
    const runs = results.get(kind)!;
    const cols = BYTE_POINTS.map((_, p) =>
      `${median(runs.map((r) => r.bytesAt[p]!)).toFixed(0)} / ${median(runs.map((r) => r.avgBytesAt[p]!)).toFixed(0)}`.padEnd(
        15,
      ),
    );
    const ratio = median(runs.map((r) => r.bytesAt[2]! / r.bytesAt[0]!));
    const avgRatio = median(runs.map((r) => r.avgBytesAt[2]! / r.avgBytesAt[0]!));
    console.log(
      `${kind.padEnd(8)} | ${cols.join(" | ")} | ${ratio.toFixed(2)}×`.padEnd(75) + ` | ${avgRatio.toFixed(2)}×`,
    );
  }
}

await main();
