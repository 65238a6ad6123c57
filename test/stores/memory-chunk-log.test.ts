import { describe, expect, it } from "vitest";
import { MemoryChunkLogs } from "../../stores/memory-chunk-log.js";
import { expectAgentError, expectThrowsAgentError } from "../harness/agent-error-expectations.js";
import { chunk } from "./chunk-factory.js";
import { startWatch } from "./conformance-chunks.js";

// The memory store's chunk logs beyond the conformance suite: its bookkeeping (how many logs and
// watchers it holds, a session with no logs left), several watchers of one log, and the method
// each argument error names.

const HOUR = 3_600_000;
const BG = { sessionId: "s1", snapshotId: "bg" };
const NO_SESSION = { sessionId: "", snapshotId: "bg" };

describe("memory chunk logs", () => {
  it("counts the logs it holds", async () => {
    const logs = new MemoryChunkLogs();
    await logs.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    await logs.appendChunks({ sessionId: "s2", snapshotId: "bg" }, [chunk(1)], Date.now() + HOUR);
    expect(logs.logCount).toBe(2);
  });

  it("holds nothing of a session whose every log was swept (removing the session then finds none)", async () => {
    const logs = new MemoryChunkLogs();
    const K = Date.now() + HOUR;
    await logs.appendChunks(BG, [chunk(1)], K);
    await logs.appendChunks({ sessionId: "s1", snapshotId: "bg-2" }, [chunk(1)], K);
    expect(await logs.sweepChunks(K)).toBe(2);
    expect(logs.removeSession("s1")).toBe(false);
  });

  it("wakes every watcher of a log for one append", async () => {
    const logs = new MemoryChunkLogs();
    const first = startWatch(logs, BG);
    const second = startWatch(logs, BG);
    try {
      await logs.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await first.untilWakes(1);
      await second.untilWakes(1);
    } finally {
      await Promise.all([first.stop(), second.stop()]);
    }
  });

  it("keeps waking a watcher of a log after another watcher of it stopped", async () => {
    const logs = new MemoryChunkLogs();
    const leaving = startWatch(logs, BG);
    const staying = startWatch(logs, BG);
    try {
      await leaving.stop();
      expect(logs.watcherCount).toBe(1);
      await logs.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await staying.untilWakes(1);
    } finally {
      await staying.stop();
    }
    expect(logs.watcherCount).toBe(0);
  });

  it("names hasChunks in its key error", async () => {
    await expectAgentError(new MemoryChunkLogs().hasChunks(NO_SESSION), "INVALID_ARGUMENT", /^hasChunks: /);
  });

  it("names keepChunks in its key error", async () => {
    await expectAgentError(
      new MemoryChunkLogs().keepChunks(NO_SESSION, Date.now() + HOUR),
      "INVALID_ARGUMENT",
      /^keepChunks: the key/,
    );
  });

  it("names watchChunks in its key error", () => {
    expectThrowsAgentError(
      () => new MemoryChunkLogs().watchChunks(NO_SESSION, new AbortController().signal),
      "INVALID_ARGUMENT",
      /^watchChunks: /,
    );
  });
});
