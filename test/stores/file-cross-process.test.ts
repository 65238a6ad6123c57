import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileSessionStore } from "../../stores/file-store.js";
import { contendingWriter, createContendedSession, type WriterAck } from "./ledger-fixtures.js";
import { startChildWriter } from "./shared-store.js";
import { commitRecord, eventually, ids, pendingRecord, readState, type CounterState } from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

// The cross-process cases every shared store must pass (racing commits, updateRecord
// increments, status delivery) run in the conformance suite (file.test.ts passes it the
// `crossProcess` descriptor). This file holds what is specific to the file store.
describe("file store across processes", () => {
  it("loses no commit when two processes released together race on one session", { timeout: 120_000 }, async () => {
    // One writer per process: every conflict is between the processes, so only the
    // store's cross-process lock file keeps two read-check-write commits apart.
    const TURNS = 40;
    const dir = await mkdtemp(join(tmpdir(), "agentd-file-xproc-race-"));
    const store = new FileSessionStore<CounterState>(dir);
    try {
      const root = await createContendedSession(store, "race");
      const child = startChildWriter<WriterAck[][]>(
        { kind: "file", dir },
        { cmd: "writers", sessionId: "race", tag: "child", writers: 1, turns: TURNS, peerTag: "local" },
      );
      let localAcks: WriterAck[];
      let childAcks: WriterAck[];
      try {
        // Two barriers. Start: the child has started, opened the store and waits for `go`; both
        // sides start from it at once. In the loop: each writer's second turn waits until the
        // other process's first turn is committed, so neither can finish before the other began
        // (an in-process writer needs a few ms per turn, a child a few hundred ms to start).
        await child.ready;
        child.go();
        const local = contendingWriter(store, "race", "local-w0", TURNS, "child");
        [localAcks, [childAcks]] = await Promise.all([local, child.result]);
      } finally {
        child.kill();
      }

      // No lost update: the head's chain holds the root and every acknowledged commit, once.
      const acked = [...ids(localAcks), ...ids(childAcks)];
      const head = (await store.getHead("race"))!;
      const lineage: string[] = [];
      for (let id: string | undefined = head.headSnapshotId; id !== undefined && lineage.length <= 2 * TURNS + 1;) {
        lineage.unshift(id);
        id = (await store.getRecord(id))?.parentId;
      }
      expect(lineage[0]).toBe(root.snapshotId);
      expect(
        acked.filter((id) => !lineage.includes(id)),
        "acknowledged commits missing from the chain",
      ).toEqual([]);
      expect(lineage).toHaveLength(2 * TURNS + 1);
      expect(head.version).toBe(2 * TURNS + 1);
      expect((await readState(store, head.headSnapshotId))!.messages.map((m) => m.content[0]!.text)).toEqual(lineage);

      // The write loops overlapped: the chain switches from one process to the other, both ways.
      const origin = lineage.slice(1).map((id) => (id.startsWith("child-") ? "child" : "local"));
      const switches = origin.slice(1).map((o, i) => `${origin[i]}>${o}`);
      expect(switches).toContain("child>local");
      expect(switches).toContain("local>child");
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it(
    "delivers a status change written by another process through fs.watch alone (no poll)",
    { timeout: 60_000 },
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "agentd-file-xproc-"));
      const store = new FileSessionStore<CounterState>(dir, { pollIntervalMs: 0 });
      try {
        await commitRecord(store, undefined, pendingRecord("s1", "bg"));
        const { seen, stop } = recordStatuses(store, "bg");
        try {
          await eventually(() => seen.length === 1);
          const child = startChildWriter<string | null>(
            { kind: "file", dir, options: { pollIntervalMs: 0 } },
            { cmd: "status", snapshotId: "bg", status: "aborted" },
          );
          try {
            await child.ready;
            child.go();
            expect(await child.result).toBe("aborted");
          } finally {
            child.kill();
          }
          await eventually(() => seen.length === 2, 5_000);
        } finally {
          await stop();
        }
        expect(seen).toEqual(["pending", "aborted"]);
      } finally {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
