import { describe, expect, it } from "vitest";
import type { ConformanceOptions, StoreUnderTest } from "./conformance.js";
import { contendingWriter, createContendedSession, type WriterAck } from "./ledger-fixtures.js";
import { crossProcessOf, runChildWriter, startChildWriter } from "./shared-store.js";
import {
  allRecords,
  checkpointRecord,
  commitRecord,
  eventually,
  ids,
  pendingRecord,
  readState,
} from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

/** Concurrent writers: no acknowledged turn or update lost under racing writers, in this process and (shared stores only) across processes. */
export function describeWriters(fresh: () => Promise<StoreUnderTest>, name: string, options: ConformanceOptions): void {
  describe("concurrent writers", () => {
    it(
      "loses no acknowledged turn with 20 writers racing on one session (half in another process when the store is shared)",
      { timeout: 120_000 },
      async () => {
        const { store, crossProcess } = await fresh();
        const WRITERS = 20;
        const TURNS = 5;
        const root = await createContendedSession(store, "race");
        let childAcks: Promise<WriterAck[][]> = Promise.resolve([]);
        let inProcessWriters = WRITERS;
        if (crossProcess) {
          const child = startChildWriter<WriterAck[][]>(crossProcess, {
            cmd: "writers",
            sessionId: "race",
            tag: "child",
            writers: WRITERS / 2,
            turns: TURNS,
            peerTag: "local",
          });
          try {
            await child.ready;
          } catch (error) {
            child.kill();
            throw error;
          }
          child.go();
          childAcks = child.result;
          inProcessWriters = WRITERS / 2;
        }
        const localAcks = Promise.all(
          Array.from({ length: inProcessWriters }, (_, i) =>
            contendingWriter(store, "race", `local-w${i}`, TURNS, crossProcess ? "child" : undefined),
          ),
        );
        const acks = [...(await localAcks), ...(await childAcks)].flat();
        const acked = ids(acks);
        expect(acked).toHaveLength(WRITERS * TURNS);
        expect(new Set(acked).size).toBe(acked.length);

        const head = (await store.getHead("race"))!;
        expect(head.turnCount).toBe(WRITERS * TURNS + 1);
        expect(head.version).toBe(WRITERS * TURNS + 1);
        // Walk the chain from the head back to the root by parent links.
        const lineage: string[] = [];
        for (let id: string | undefined = head.headSnapshotId; id !== undefined;) {
          const record = await store.getRecord(id);
          expect(record, `record ${id} on the head's chain`).toBeDefined();
          lineage.push(id);
          id = record!.parentId;
          expect(lineage.length).toBeLessThanOrEqual(WRITERS * TURNS + 1);
        }
        lineage.reverse();
        expect(lineage[0]).toBe(root.snapshotId);
        expect(lineage.slice(1).sort()).toEqual([...acked].sort());
        // Every writer's own turns are in its commit order; the head's state holds one message per turn.
        const state = (await readState(store, head.headSnapshotId))!;
        expect(state.messages.map((m) => m.content[0]!.text)).toEqual(lineage);
        expect(ids(await allRecords(store, "race", 40)).sort()).toEqual([...lineage].sort());
        if (crossProcess) {
          // The processes interleaved (each waits for the other's first commit before its second): the chain switches both ways.
          const origin = lineage.slice(1).map((id) => (id.startsWith("child-") ? "child" : "local"));
          const switches = origin.slice(1).map((o, i) => `${origin[i]}>${o}`);
          expect(switches).toContain("child>local");
          expect(switches).toContain("local>child");
        }
      },
    );

    // Registered only for stores shared across processes (never skipped: a memory store run just has fewer tests).
    if (!options.sharedAcrossProcesses) return;

    /** The store under test and what a second process needs to open it (a shared store's factory must give it). */
    async function sharedStore() {
      const { store, crossProcess } = await fresh();
      return { store, crossProcess: crossProcessOf(name, crossProcess) };
    }

    it(
      "loses no updateRecord increment when another process increments the same record",
      { timeout: 60_000 },
      async () => {
        const { store, crossProcess } = await sharedStore();
        await commitRecord(store, undefined, checkpointRecord("s1", "counter"));
        const child = startChildWriter<number>(crossProcess, { cmd: "heartbeats", snapshotId: "counter", count: 30 });
        await child.ready;
        child.go();
        const local = Promise.all(
          Array.from({ length: 30 }, () =>
            store.updateRecord("counter", (e) => ({ ...e, heartbeatAt: (e.heartbeatAt ?? 0) + 1 })),
          ),
        );
        const [applied, results] = await Promise.all([child.result, local]);
        expect(applied).toBe(30);
        expect(results.every((r) => r !== null)).toBe(true);
        expect((await store.getRecord("counter"))!.heartbeatAt).toBe(60);
      },
    );

    it(
      "tells a subscriber waiting for a record that another process then commits pending",
      { timeout: 60_000 },
      async () => {
        const { store, crossProcess } = await sharedStore();
        const { seen, stop } = recordStatuses(store, "elsewhere");
        try {
          const version = await runChildWriter<number>(crossProcess, {
            cmd: "pending",
            sessionId: "s-elsewhere",
            snapshotId: "elsewhere",
          });
          expect(version).toBe(1);
          await eventually(() => seen.length === 1, 5_000);
        } finally {
          await stop();
        }
        expect(seen).toEqual(["pending"]);
      },
    );

    it("delivers a status change written by another process to a subscriber", { timeout: 60_000 }, async () => {
      const { store, crossProcess } = await sharedStore();
      await commitRecord(store, undefined, pendingRecord("s1", "bg"));
      const { seen, stop } = recordStatuses(store, "bg");
      try {
        await eventually(() => seen.length === 1);
        const status = await runChildWriter<string | null>(crossProcess, {
          cmd: "status",
          snapshotId: "bg",
          status: "aborted",
        });
        expect(status).toBe("aborted");
        await eventually(() => seen.length === 2, 5_000);
      } finally {
        await stop();
      }
      expect(seen).toEqual(["pending", "aborted"]);
    });
  });
}
