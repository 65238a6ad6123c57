import { MongoClient, type Collection } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";
import type { ChunkLogKey, StoredChunk } from "../../stores/chunk-log.js";
import { claimLog } from "../../stores/mongodb/chunk-fence.js";
import type { StreamChunkDocument } from "../../stores/mongodb/chunk-document.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { freshPrefix } from "./mongodb-fixtures.js";
import type { CounterState } from "./snapshot-factory.js";

// Chunk logs fenced by run: two workers (two store instances, as two agentd processes hold) append
// to one log on mongo-java-server. Once the later run claimed the log, the stalled earlier run's
// late append is refused (ABORTED), so no chunk of the old run follows the new run's first chunk.
const DATABASE = "agentd_chunk_fence";
type Store = MongoSessionStore<CounterState>;
const KEEP = Date.now() + 3_600_000;

const text = (label: string): AgentStreamChunk =>
  ({ modelChunk: { role: "model", content: [{ text: label }] } }) as AgentStreamChunk;
const chunk = (sequence: number, label: string): StoredChunk => ({ sequence, chunk: text(label) });
const labels = (chunks: readonly StoredChunk[]): string[] =>
  chunks.map((c) => {
    const content = (c.chunk as { modelChunk?: { content?: { text?: string }[] } }).modelChunk?.content?.[0]?.text;
    return `${c.sequence}:${content ?? JSON.stringify(c.chunk)}`;
  });
const marker = (run: number) => (sequence: number) =>
  ({ takeover: { supersededAfter: 0, turnIndex: run }, sequence }) as unknown as AgentStreamChunk;

describe("mongodb store: chunk logs fenced by run (two workers, mongo-java-server)", () => {
  let server: MongoJavaServer;
  let raw: MongoClient;
  const opened: Store[] = [];
  beforeAll(async () => {
    server = await MongoJavaServer.start();
    raw = new MongoClient(server.uri);
  }, 300_000);
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });
  afterAll(async () => {
    await raw?.close();
    await server?.stop();
  });

  const open = async (prefix: string): Promise<Store> => {
    const store = new MongoSessionStore<CounterState>({
      uri: server.uri,
      database: DATABASE,
      collectionPrefix: prefix,
    });
    opened.push(store);
    await store.ready();
    return store;
  };
  const workers = async () => {
    const prefix = freshPrefix();
    return { prefix, a: await open(prefix), b: await open(prefix) };
  };
  const log = { sessionId: "s1", snapshotId: "job" };
  const runOf = (run: number): ChunkLogKey & { run: number } => ({ ...log, run });

  it("refuses the stalled run's late append once the takeover claimed the log", async () => {
    const { a, b } = await workers();
    await a.appendChunks(runOf(0), [chunk(1, "a1"), chunk(2, "a2"), chunk(3, "a3")], KEEP);
    // The takeover (run 1) read 3 as the last sequence and claims the log with its marker.
    expect(await b.claimChunks(runOf(1), 3, marker(1), KEEP)).toBe(4);
    // The stalled worker wakes up and appends its next chunk: refused, naming the later run.
    const late = await a.appendChunks(runOf(0), [chunk(4, "a4")], KEEP).catch((e: unknown) => e);
    expect(late).toMatchObject({ status: "ABORTED", details: { run: 0, supersededBy: 1 } });
    // The new run emits its marker at the claimed sequence (a repeated append of its own: done) and goes on.
    await b.appendChunks(runOf(1), [{ sequence: 4, chunk: marker(1)(4) }], KEEP);
    await b.appendChunks(runOf(1), [chunk(5, "b5")], KEEP);
    // The stalled worker's retry of its append (its first attempt's reply lost, as far as it knows): refused too.
    await expect(a.appendChunks(runOf(0), [chunk(4, "a4")], KEEP)).rejects.toMatchObject({ status: "ABORTED" });
    const read = await b.readChunks(log, 0, 100);
    expect(labels(read)).toEqual(["1:a1", "2:a2", "3:a3", expect.stringContaining("4:"), "5:b5"]);
    expect(read[3]!.chunk).toMatchObject({ takeover: { turnIndex: 1 } });
  });

  it("counts a chunk the earlier run lands between the claim's read and its insert, and claims after it", async () => {
    const { prefix, a } = await workers();
    await a.appendChunks(runOf(0), [chunk(1, "a1")], KEEP);
    const chunks = raw.db(DATABASE).collection<StreamChunkDocument>(`${prefix}stream_chunks`);
    // The earlier run's append lands right before the claim's first insert (a real interleaving on the server).
    let interleaved = false;
    const racing = new Proxy(chunks, {
      get(target, name, receiver) {
        if (name !== "insertOne") return Reflect.get(target, name, receiver) as unknown;
        return async (doc: StreamChunkDocument) => {
          if (!interleaved) {
            interleaved = true;
            await a.appendChunks(runOf(0), [chunk(2, "a2")], KEEP);
          }
          return target.insertOne(doc);
        };
      },
    }) as Collection<StreamChunkDocument>;
    const documentAt = (sequence: number): StreamChunkDocument => ({
      ...log,
      sequence,
      run: 1,
      chunk: JSON.stringify(marker(1)(sequence)),
      keepUntil: new Date(KEEP),
      expireAt: new Date(KEEP),
    });
    expect(await claimLog(racing, runOf(1), 1, documentAt)).toBe(3);
    expect(interleaved).toBe(true);
    // The earlier run's chunk 2 landed before the claim, so it is counted; its next one (3) is refused.
    await expect(a.appendChunks(runOf(0), [chunk(3, "a3")], KEEP)).rejects.toMatchObject({ status: "ABORTED" });
    expect(labels(await a.readChunks(log, 0, 100)).map((l) => l.split(":")[0])).toEqual(["1", "2", "3"]);
  });

  it("refuses a claim of a run older than the one that holds the log, and keeps unfenced appends as they were", async () => {
    const { a, b } = await workers();
    await a.appendChunks(runOf(0), [chunk(1, "a1")], KEEP);
    expect(await b.claimChunks(runOf(2), 1, marker(2), KEEP)).toBe(2);
    await expect(a.claimChunks(runOf(1), 1, marker(1), KEEP)).rejects.toMatchObject({ status: "ABORTED" });
    // An append without a run (a writer that does not fence) still fails ALREADY_EXISTS on a held sequence.
    await expect(a.appendChunks(log, [chunk(2, "x")], KEEP)).rejects.toMatchObject({ status: "ALREADY_EXISTS" });
  });
});
