/**
 * Store benchmark (`npm run bench:stores`): for the memory, file and MongoDB
 * (mongo-java-server, or MONGODB_URI when set) stores, measures save and
 * latest-by-session latency with 10, 100 and 1000 snapshots already in the
 * session, and the bytes persisted for one turn at turn 10 vs turn 200 of a
 * conversation whose snapshots each hold the full, growing state. Figures are
 * printed absolute and as ratios against the memory store measured in the same
 * run. Not a test: nothing is asserted.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { BSON, MongoClient } from "mongodb";
import { userText, type Message } from "../src/types/content.js";
import type { SessionSnapshot } from "../src/types/snapshot.js";
import { FileSessionStore } from "../stores/file-store.js";
import { InMemorySessionStore } from "../stores/memory-store.js";
import { MongoSessionStore } from "../stores/mongodb/mongo-store.js";
import type { SessionStore } from "../stores/snapshot-store.js";
import { mongoForTests } from "../test/harness/mongo-java-server.js";

type Row = SessionSnapshot<{ turn: number }>;
type Kind = "memory" | "file" | "mongodb";

interface Opened {
  store: SessionStore<{ turn: number }>;
  /** Bytes persisted for the row (file size, BSON document size, or JSON size in memory). */
  bytesOf(snapshotId: string): Promise<number>;
  dispose(): Promise<void>;
}

const SIZES = [10, 100, 1000];
const SAMPLES = 100;
const TURN_TEXT = "lorem ipsum dolor sit amet ".repeat(10); // ~270 bytes per message

function messagesFor(turns: number): Message[] {
  const out: Message[] = [];
  for (let t = 0; t < turns; t++) {
    out.push(userText(`turn ${t}: ${TURN_TEXT}`));
    out.push({ role: "model", content: [{ text: `reply ${t}: ${TURN_TEXT}` }] } as Message);
  }
  return out;
}

function row(sessionId: string, turn: number, parentId: string | undefined, messages: Message[]): Row {
  const now = Date.now();
  return {
    snapshotId: "",
    sessionId,
    turnIndex: turn,
    createdAt: now,
    updatedAt: now,
    status: "completed",
    ...(parentId ? { parentId } : {}),
    state: { messages, artifacts: [], custom: { turn } },
  };
}

async function open(kind: Kind, mongoUri: string | undefined): Promise<Opened> {
  if (kind === "memory") {
    const store = new InMemorySessionStore<{ turn: number }>();
    return {
      store,
      bytesOf: async (id) => Buffer.byteLength(JSON.stringify(await store.getSnapshot(id))),
      dispose: async () => store.close(),
    };
  }
  if (kind === "file") {
    const dir = await mkdtemp(join(tmpdir(), "agentd-bench-"));
    const store = new FileSessionStore<{ turn: number }>(dir);
    return {
      store,
      bytesOf: async (id) => (await stat(join(dir, `${id}.json`))).size,
      dispose: async () => {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
  const collectionPrefix = `bench${randomBytes(4).toString("hex")}_`;
  const store = new MongoSessionStore<{ turn: number }>({ uri: mongoUri!, database: "agentd_bench", collectionPrefix });
  const client = new MongoClient(mongoUri!);
  const raw = client.db("agentd_bench").collection<{ _id: string }>(`${collectionPrefix}snapshots`);
  return {
    store,
    bytesOf: async (id) => BSON.calculateObjectSize((await raw.findOne({ _id: id }))!),
    dispose: async () => {
      await raw.drop().catch(() => undefined);
      await store.close();
      await client.close();
    },
  };
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/** Mean save and latest latency (ms) with `existing` snapshots already in the session. */
async function latencyAt(kind: Kind, mongoUri: string | undefined, existing: number): Promise<{ save: number; latest: number }> {
  const opened = await open(kind, mongoUri);
  const { store } = opened;
  const messages = messagesFor(2);
  let parent: string | undefined;
  for (let i = 0; i < existing; i++) {
    parent = (await store.saveSnapshot(undefined, () => row("bench", i, parent, messages)))!.snapshotId;
  }
  const saves: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now();
    parent = (await store.saveSnapshot(undefined, () => row("bench", existing + i, parent, messages)))!.snapshotId;
    saves.push(performance.now() - t0);
  }
  const latests: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now();
    await store.getLatestSnapshot("bench");
    latests.push(performance.now() - t0);
  }
  await opened.dispose();
  return { save: mean(saves), latest: mean(latests) };
}

/** Bytes persisted for the snapshot of turn 10 and of turn 200. */
async function bytesPerTurn(kind: Kind, mongoUri: string | undefined): Promise<{ turn10: number; turn200: number }> {
  const opened = await open(kind, mongoUri);
  const result = { turn10: 0, turn200: 0 };
  let parent: string | undefined;
  for (let turn = 1; turn <= 200; turn++) {
    const saved = await opened.store.saveSnapshot(undefined, () => row("conv", turn, parent, messagesFor(turn)));
    parent = saved!.snapshotId;
    if (turn === 10) result.turn10 = await opened.bytesOf(parent);
    if (turn === 200) result.turn200 = await opened.bytesOf(parent);
  }
  await opened.dispose();
  return result;
}

function fmt(n: number, digits = 3): string {
  return n.toFixed(digits);
}

async function main(): Promise<void> {
  const mongo = await mongoForTests();
  const kinds: Kind[] = ["memory", "file", "mongodb"];
  console.log(`store benchmark — ${SAMPLES} samples per figure; MongoDB: ${process.env.MONGODB_URI ? "MONGODB_URI" : "mongo-java-server (in-memory, local process)"}`);
  try {
    for (const kind of kinds) await latencyAt(kind, mongo.uri, 100); // warm-up (JIT, connections), discarded
    const latency = new Map<string, { save: number; latest: number }>();
    for (const kind of kinds) for (const n of SIZES) latency.set(`${kind}:${n}`, await latencyAt(kind, mongo.uri, n));
    const bytes = new Map<Kind, { turn10: number; turn200: number }>();
    for (const kind of kinds) bytes.set(kind, await bytesPerTurn(kind, mongo.uri));

    console.log("\nlatency, mean ms (× memory store)");
    console.log(["store", ...SIZES.flatMap((n) => [`save@${n}`, `latest@${n}`])].join("\t"));
    for (const kind of kinds) {
      const cells = SIZES.flatMap((n) => {
        const m = latency.get(`memory:${n}`)!;
        const v = latency.get(`${kind}:${n}`)!;
        return [`${fmt(v.save)} (×${fmt(v.save / m.save, 0)})`, `${fmt(v.latest)} (×${fmt(v.latest / m.latest, 0)})`];
      });
      console.log([kind, ...cells].join("\t"));
    }
    console.log("\nbytes persisted for one turn's snapshot (× memory store's JSON size)");
    console.log(["store", "turn 10", "turn 200", "200/10"].join("\t"));
    for (const kind of kinds) {
      const m = bytes.get("memory")!;
      const v = bytes.get(kind)!;
      console.log(
        [kind, `${v.turn10} (×${fmt(v.turn10 / m.turn10, 2)})`, `${v.turn200} (×${fmt(v.turn200 / m.turn200, 2)})`, fmt(v.turn200 / v.turn10, 1)].join("\t"),
      );
    }
  } finally {
    await mongo.stop();
  }
}

await main();
