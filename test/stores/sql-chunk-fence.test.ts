import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";
import type { ChunkLogKey, StoredChunk } from "../../stores/chunk-log.js";
import { PostgresEngine } from "../../stores/sql/postgres-engine.js";
import { SqlSessionStore } from "../../stores/sql/sql-store.js";
import { SqliteEngine } from "../../stores/sql/sqlite-engine.js";
import { freshSchema, postgresForTests, type PostgresServer } from "../harness/postgres-server.js";
import type { CounterState } from "./snapshot-factory.js";

// Chunk logs fenced by run on the SQL engines: two workers (two store instances, each with its own
// connections, as two agentd processes hold) share one SQLite file or one PostgreSQL schema. Once
// the later run claimed the log, the stalled earlier run's late append is refused (ABORTED), so no
// chunk of the old run follows the new run's first chunk.
type Store = SqlSessionStore<CounterState>;
const KEEP = Date.now() + 3_600_000;

const text = (label: string): AgentStreamChunk =>
  ({ modelChunk: { role: "model", content: [{ text: label }] } }) as AgentStreamChunk;
const chunk = (sequence: number, label: string): StoredChunk => ({ sequence, chunk: text(label) });
const labels = (chunks: readonly StoredChunk[]): string[] =>
  chunks.map((c) => {
    const content = (c.chunk as { modelChunk?: { content?: { text?: string }[] } }).modelChunk?.content?.[0]?.text;
    return `${c.sequence}:${content ?? "marker"}`;
  });
const marker = (run: number) => (sequence: number) =>
  ({ takeover: { supersededAfter: 0, turnIndex: run }, sequence }) as unknown as AgentStreamChunk;
const log = { sessionId: "s1", snapshotId: "job" };
const runOf = (run: number): ChunkLogKey & { run: number } => ({ ...log, run });

let server: PostgresServer;
let release: () => Promise<void>;
beforeAll(async () => {
  ({ server, release } = await postgresForTests());
}, 120_000);
afterAll(() => release?.());

const engines: Array<{ name: string; workers: (open: (make: () => Store) => Store) => Promise<[Store, Store]> }> = [
  {
    name: "sqlite (two store instances on one file)",
    workers: async (open) => {
      const dir = await mkdtemp(join(tmpdir(), "agentd-sql-fence-"));
      dirs.push(dir);
      const path = join(dir, "agentd.db");
      return [
        open(() => new SqlSessionStore(new SqliteEngine(path))),
        open(() => new SqlSessionStore(new SqliteEngine(path))),
      ];
    },
  },
  {
    name: "postgres (two store instances on one schema, real server)",
    workers: async (open) => {
      const schema = freshSchema();
      const make = () =>
        new SqlSessionStore<CounterState>(
          new PostgresEngine({ connectionString: server.uri(), schema, description: server.uri(schema) }),
        );
      return [open(make), open(make)];
    },
  },
];
const dirs: string[] = [];

describe.each(engines)("$name: chunk logs fenced by run", ({ workers: makeWorkers }) => {
  const opened: Store[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });
  const workers = async (): Promise<[Store, Store]> => {
    const [a, b] = await makeWorkers((make) => {
      const store = make();
      opened.push(store);
      return store;
    });
    await a.ready();
    await b.ready();
    return [a, b];
  };

  it("refuses the stalled run's late append once the takeover claimed the log", async () => {
    const [a, b] = await workers();
    await a.appendChunks(runOf(0), [chunk(1, "a1"), chunk(2, "a2"), chunk(3, "a3")], KEEP);
    // The takeover (run 1) read 3 as the last sequence and claims the log with its marker.
    expect(await b.claimChunks(runOf(1), 3, marker(1), KEEP)).toBe(4);
    // The stalled worker wakes up and appends its next chunk: refused, naming the later run.
    const late = await a.appendChunks(runOf(0), [chunk(4, "a4")], KEEP).catch((e: unknown) => e);
    expect(late).toMatchObject({
      status: "ABORTED",
      message: "the chunk log of snapshot job was taken over by run 1 of its work; this run's (0) append is refused",
      details: { run: 0, supersededBy: 1 },
    });
    // Even at a sequence no run holds yet.
    await expect(a.appendChunks(runOf(0), [chunk(9, "a9")], KEEP)).rejects.toMatchObject({ status: "ABORTED" });
    // The new run emits its marker at the claimed sequence (a repeated append of its own: done) and goes on.
    await b.appendChunks(runOf(1), [{ sequence: 4, chunk: marker(1)(4) }], KEEP);
    await b.appendChunks(runOf(1), [chunk(5, "b5")], KEEP);
    const read = await a.readChunks(log, 0, 100);
    expect(labels(read)).toEqual(["1:a1", "2:a2", "3:a3", "4:marker", "5:b5"]);
    expect(read[3]!.chunk).toMatchObject({ takeover: { turnIndex: 1 } });
  });

  it("claims after a chunk the earlier run appended since the takeover read the log", async () => {
    const [a, b] = await workers();
    await a.appendChunks(runOf(0), [chunk(1, "a1")], KEEP);
    // The takeover read 1 as the last sequence; the earlier run lands chunk 2 before the claim.
    await a.appendChunks(runOf(0), [chunk(2, "a2")], KEEP);
    expect(await b.claimChunks(runOf(1), 1, marker(1), KEEP)).toBe(3);
    await expect(a.appendChunks(runOf(0), [chunk(3, "a3")], KEEP)).rejects.toMatchObject({ status: "ABORTED" });
    expect(labels(await b.readChunks(log, 0, 100))).toEqual(["1:a1", "2:a2", "3:marker"]);
  });

  it("answers a repeated claim of the same run with its first chunk, writing nothing more", async () => {
    const [a, b] = await workers();
    await a.appendChunks(runOf(0), [chunk(1, "a1")], KEEP);
    expect(await b.claimChunks(runOf(1), 1, marker(1), KEEP)).toBe(2);
    await b.appendChunks(runOf(1), [chunk(3, "b3")], KEEP);
    expect(await b.claimChunks(runOf(1), 1, marker(1), KEEP)).toBe(2);
    expect(labels(await a.readChunks(log, 0, 100))).toEqual(["1:a1", "2:marker", "3:b3"]);
  });

  it("refuses a claim of a run older than the one that holds the log, and keeps unfenced appends as they were", async () => {
    const [a, b] = await workers();
    await a.appendChunks(runOf(0), [chunk(1, "a1")], KEEP);
    expect(await b.claimChunks(runOf(2), 1, marker(2), KEEP)).toBe(2);
    await expect(a.claimChunks(runOf(1), 1, marker(1), KEEP)).rejects.toMatchObject({
      status: "ABORTED",
      details: { run: 1, supersededBy: 2 },
    });
    // An append without a run (a writer that does not fence) still fails ALREADY_EXISTS on a held sequence.
    await expect(a.appendChunks(log, [chunk(2, "x"), chunk(3, "y")], KEEP)).rejects.toMatchObject({
      status: "ALREADY_EXISTS",
      message: expect.stringContaining("already holds a chunk with one of sequences 2..3; nothing was appended"),
    });
    // A fenced append of the holding run at a sequence another run holds: ALREADY_EXISTS, nothing appended.
    await expect(b.appendChunks(runOf(2), [chunk(1, "x"), chunk(2, "y")], KEEP)).rejects.toMatchObject({
      status: "ALREADY_EXISTS",
    });
    expect(labels(await a.readChunks(log, 0, 100))).toEqual(["1:a1", "2:marker"]);
  });

  it("refuses a claim whose run is not an integer >= 0 with INVALID_ARGUMENT, writing nothing; run 0 may claim", async () => {
    const [a] = await workers();
    await a.appendChunks(log, [chunk(1, "a1")], KEEP);
    for (const run of [-1, 1.5, Number.NaN]) {
      await expect(a.claimChunks(runOf(run), 1, marker(run), KEEP)).rejects.toMatchObject({
        status: "INVALID_ARGUMENT",
        message: `claimChunks: run must be an integer >= 0 (got ${run})`,
      });
    }
    await expect(a.claimChunks(runOf(0), 1, marker(0), Number.NaN)).rejects.toMatchObject({
      status: "INVALID_ARGUMENT",
      message: expect.stringContaining("claimChunks"),
    });
    expect(labels(await a.readChunks(log, 0, 100))).toEqual(["1:a1"]);
    expect(await a.claimChunks(runOf(0), 1, marker(0), KEEP)).toBe(2);
  });

  it("refuses a run's append that overlaps its own chunks only in part, or chunks no run appended, with ALREADY_EXISTS", async () => {
    const [a] = await workers();
    await a.appendChunks(log, [chunk(1, "u1"), chunk(2, "u2")], KEEP); // no run: an unfenced writer
    const held = "already holds a chunk with one of sequences";
    // Run 0 does not hold the unfenced chunks: its append of the same sequences is not a repeat of its own.
    await expect(a.appendChunks(runOf(0), [chunk(1, "r1"), chunk(2, "r2")], KEEP)).rejects.toMatchObject({
      status: "ALREADY_EXISTS",
      message: expect.stringContaining(`${held} 1..2; nothing was appended`),
    });
    expect(await a.claimChunks(runOf(1), 2, marker(1), KEEP)).toBe(3);
    await a.appendChunks(runOf(1), [chunk(4, "b4")], KEEP);
    await a.appendChunks(runOf(1), [chunk(4, "b4")], KEEP); // a repeat of its own: done, nothing more
    await expect(a.appendChunks(runOf(1), [chunk(4, "b4"), chunk(5, "b5")], KEEP)).rejects.toMatchObject({
      status: "ALREADY_EXISTS",
      message: expect.stringContaining(`${held} 4..5; nothing was appended`),
    });
    expect(labels(await a.readChunks(log, 0, 100))).toEqual(["1:u1", "2:u2", "3:marker", "4:b4"]);
  });
});
