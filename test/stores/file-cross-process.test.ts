import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileSessionStore } from "../../stores/file-store.js";
import { startChildWriter } from "./shared-store.js";
import { commitRecord, eventually, pendingRecord, type CounterState } from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

// The cross-process cases every shared store must pass (racing commits, updateRecord
// increments, status delivery) run in the conformance suite (file.test.ts passes it the
// `crossProcess` descriptor). This file holds what is specific to the file store.
describe("file store across processes", () => {
  it("delivers a status change written by another process through fs.watch alone (no poll)", { timeout: 60_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-file-xproc-"));
    const store = new FileSessionStore<CounterState>(dir, { pollIntervalMs: 0 });
    try {
      await commitRecord(store, undefined, pendingRecord("s1", "bg"));
      const { seen, stop } = recordStatuses(store, "bg");
      try {
        await eventually(() => seen.length === 1);
        const child = startChildWriter<string | null>({ kind: "file", dir, options: { pollIntervalMs: 0 } }, { cmd: "status", snapshotId: "bg", status: "aborted" });
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
  });
});
