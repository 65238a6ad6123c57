import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd } from "../harness/agentd-process.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { sqliteChange } from "../harness/sqlite-rows.js";
import { watchDetachedWork } from "./watched-work.js";

describe("WatchSnapshot when its record disappears", () => {
  it("ends NOT_FOUND soon after the record is deleted from the SQLite store", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-watch-gone-"));
    const agentd = await startAgentd({
      // A 2 s TTL (re-checks every 500 ms), as in the MongoDB variant: with 600 ms, a worker stalled that
      // long on a loaded machine made the watch report EXPIRED before the record went.
      args: ["--store", `sqlite:${dir}/agentd.db`, "--heartbeat-interval-ms", "100", "--heartbeat-ttl-ms", "2000"],
    });
    try {
      const client = agentServiceClient(agentd.baseUrl, "grpc");
      const { statuses, error } = await watchDetachedWork(client, 8_000, async (snapshotId) => {
        expect(sqliteChange(join(dir, "agentd.db"), "DELETE FROM records WHERE snapshot_id = ?", snapshotId)).toBe(1);
      });
      expect(statuses).toEqual([SnapshotStatus.PENDING]);
      // NOT_FOUND from the re-check (every TTL/4 = 500 ms), not DEADLINE_EXCEEDED at the call's 8 s.
      expect(error?.code).toBe(Code.NotFound);
    } finally {
      await agentd.stop("SIGKILL"); // the detached work would run on for seconds; it is not what this test is about
    }
  });
});
