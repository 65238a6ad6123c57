import { describe, expect } from "vitest";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";
import { userText } from "../../src/types/content.js";
import type { DetachedWork } from "../../src/types/detached-work.js";
import type { ChunkLogKey } from "../../stores/chunk-log.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { commandKey } from "../harness/mongo-crash-points.js";
import { failpointCases, failpointStores, type FailpointFlow } from "../harness/failpoint-flows.js";
import {
  checkpointRecord,
  commitRecord,
  pendingRecord,
  T0,
  type CounterRecord,
  type CounterState,
} from "../stores/snapshot-factory.js";

// A deterministic failpoint harness for the store writes of a detached job: its start, heartbeat,
// checkpoint, end, abort, a chunk append, a takeover (the row's new run and the chunk log's
// claim) and the sweep. For every MongoDB command each flow sends, the command is cut before it
// reaches the server, or after the server applied it (its reply lost), or refused with a transient
// error (not applied). The store gets the failure in-process (a failover window of 0: no retry;
// reads are retried by the driver), is abandoned as a crashed process would be, and a new store
// on the same collections repeats the flow's step, as the restarted worker does. Then
// the flow's invariants must hold: the effect is there exactly once, the row and the chain read
// back, no chunk is duplicated or lost, and the earlier run's late append is refused.
const DATABASE = "agentd_job_failpoints";
type Store = MongoSessionStore<CounterState>;
const KEEP = T0 + 10 * 365 * 24 * 3_600_000;

const work = (runs: number): DetachedWork => ({
  inputs: [{ message: userText("go on") } as DetachedWork["inputs"][number]],
  firstTurnIndex: 1,
  completed: 0,
  lastSequence: 0,
  runs: Array.from({ length: runs }, (_, i) => ({
    invocationId: `inv-${i}`,
    instance: `i${i}`,
    startedAt: T0,
    fromInput: 0,
  })),
  principal: { subject: "anonymous", tenant: "", claims: {} },
});
const text = (label: string): AgentStreamChunk =>
  ({ modelChunk: { role: "model", content: [{ text: label }] } }) as AgentStreamChunk;
const log = { sessionId: "s1", snapshotId: "job" };
const runOf = (run: number): ChunkLogKey & { run: number } => ({ ...log, run });
const marker = (sequence: number) =>
  ({ takeover: { supersededAfter: 0, turnIndex: 1 }, sequence }) as unknown as AgentStreamChunk;

/** `<command> <collection>` without the test's collection prefix (each case has its own). */
const keyOf = (command: Parameters<typeof commandKey>[0]): string =>
  commandKey(command).replace(/ t[0-9a-f]{10}_/, " ");

type Flow = FailpointFlow<Store>;

const root = (store: Store) => commitRecord(store, undefined, checkpointRecord("s1", "root"));
const jobRow = (): CounterRecord => pendingRecord("s1", "job", { parentId: "root", turnIndex: 1, work: work(1) });
const withJob = async (store: Store): Promise<void> => {
  const head = await root(store);
  await store.commit({ expectedVersion: head.version, head: { ...head }, record: jobRow() });
  await store.appendChunks(
    runOf(0),
    [1, 2].map((sequence) => ({ sequence, chunk: text(`a${sequence}`) })),
    KEEP,
  );
};
const pendingThen =
  (change: (r: CounterRecord) => CounterRecord) =>
  (r: CounterRecord): CounterRecord | null =>
    r.status === "pending" ? change(r) : null;
/** The log's chunks as `<sequence>:<run-ish label>`. */
const chunkLabels = async (store: Store): Promise<string[]> =>
  (await store.readChunks(log, 0, 100)).map(
    (c) => `${c.sequence}:${(c.chunk as { takeover?: unknown }).takeover ? "marker" : "chunk"}`,
  );

const FLOWS: Flow[] = [
  {
    name: "start (the pending row's commit)",
    setup: async (store) => void (await root(store)),
    step: async (store, repeat) => {
      const ids = (await store.listRecords("s1")).records.map((r) => r.snapshotId);
      if (ids.some((id) => id.startsWith("job"))) return; // the repeated step: it landed
      // A restarted worker detaches again under a new ID (one whose commit's outcome was lost may be taken).
      const snapshotId = repeat ? "job-again" : "job";
      const head = (await store.getHead("s1"))!;
      await store.commit({ expectedVersion: head.version, head: { ...head }, record: { ...jobRow(), snapshotId } });
    },
    check: async (store) => {
      await store.sweepExpired(Date.now() + 1); // zero grace: a row whose commit never landed goes
      const rows = (await store.listRecords("s1")).records.filter((r) => r.snapshotId.startsWith("job"));
      expect(rows.map((r) => r.status)).toEqual(["pending"]);
    },
  },
  {
    name: "heartbeat",
    setup: withJob,
    step: (store) =>
      store.updateRecord(
        "job",
        pendingThen((r) => ({ ...r, heartbeatAt: T0 + 5 })),
      ),
    check: async (store) => {
      expect(await store.getRecord("job")).toMatchObject({ status: "pending", heartbeatAt: T0 + 5, work: work(1) });
    },
  },
  {
    name: "checkpoint",
    setup: withJob,
    step: (store) =>
      store.updateRecord("job", (r) =>
        r.work?.completed === 0
          ? {
              ...r,
              work: { ...r.work, completed: 1, lastSequence: 2 },
              delta: { keepMessages: 0, appendMessages: [userText("done")] },
            }
          : null,
      ),
    check: async (store) => {
      const row = (await store.getRecord("job"))!;
      expect(row.work).toEqual({ ...work(1), completed: 1, lastSequence: 2 }); // applied once
      expect(row.delta?.appendMessages).toHaveLength(1);
    },
  },
  {
    name: "end",
    setup: withJob,
    step: (store) =>
      store.updateRecord(
        "job",
        pendingThen((r) => ({ ...r, status: "completed", finishReason: "stop" })),
      ),
    check: async (store) => {
      expect(await store.getRecord("job")).toMatchObject({ status: "completed", finishReason: "stop", work: work(1) });
    },
  },
  {
    name: "abort",
    setup: withJob,
    step: (store) =>
      store.updateRecord(
        "job",
        pendingThen((r) => ({ ...r, status: "aborted", finishReason: "aborted" })),
      ),
    check: async (store) => {
      expect((await store.getRecord("job"))?.status).toBe("aborted");
    },
  },
  {
    name: "chunk append",
    setup: withJob,
    step: (store) => store.appendChunks(runOf(0), [{ sequence: 3, chunk: text("a3") }], KEEP),
    check: async (store) => {
      expect(await chunkLabels(store)).toEqual(["1:chunk", "2:chunk", "3:chunk"]);
    },
  },
  {
    name: "takeover (the row's new run, then the chunk log's claim)",
    setup: withJob,
    step: async (store) => {
      await store.updateRecord("job", (r) =>
        r.work && r.work.runs.length === 1
          ? { ...r, heartbeatAt: T0 + 9, work: { ...r.work, runs: work(2).runs } }
          : null,
      );
      await store.claimChunks(runOf(1), 2, marker, KEEP);
    },
    check: async (store) => {
      expect((await store.getRecord("job"))?.work?.runs).toHaveLength(2);
      expect(await chunkLabels(store)).toEqual(["1:chunk", "2:chunk", "3:marker"]);
      // The first run's late append is refused.
      await expect(store.appendChunks(runOf(0), [{ sequence: 3, chunk: text("late") }], KEEP)).rejects.toMatchObject({
        status: "ABORTED",
      });
    },
  },
  {
    name: "sweep (zero grace)",
    setup: withJob,
    step: async (store) => {
      await store.sweepExpired(Date.now() + 1);
      await store.sweepChunks(Date.now());
    },
    check: async (store) => {
      expect((await store.getChain("job"))?.map((r) => r.snapshotId)).toEqual(["job"]);
      expect((await store.getRecord("root"))?.status).toBe("completed");
      expect(await chunkLabels(store)).toEqual(["1:chunk", "2:chunk"]);
    },
  },
];

describe.skipIf(Boolean(process.env.MONGODB_URI))("failing every MongoDB command of a detached job's writes", () => {
  const stores = failpointStores(DATABASE);

  failpointCases(FLOWS, { ...stores, keyOf });
});
