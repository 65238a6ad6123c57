import { ConnectError, type Client } from "@connectrpc/connect";
import type { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { textInput } from "../harness/wire-chat.js";

/** What a watch of detached work saw. */
export interface WatchedWork {
  snapshotId: string;
  /** Every status the watch yielded. */
  statuses: SnapshotStatus[];
  /** The error that ended the watch, if it did not end OK. */
  error?: ConnectError;
  /** When `onPending` finished (epoch ms). */
  actedAt: number;
}

/**
 * Detaches slow work on the assistant, watches its pending snapshot, runs
 * `onPending` once the watch has seen PENDING (e.g. deletes the record or
 * restarts the store), and resolves with what the watch saw once it ended
 * (or hit `timeoutMs`).
 */
export async function watchDetachedWork(
  client: Client<typeof AgentService>,
  timeoutMs: number,
  onPending: (snapshotId: string) => Promise<void>,
): Promise<WatchedWork> {
  const { output } = await client.run({
    init: { agent: "assistant" },
    input: { ...textInput("slow pending reply", { echoDelayMs: 1000 }), detach: true },
  });
  const watched: WatchedWork = { snapshotId: output!.snapshotId, statuses: [], actedAt: 0 };
  try {
    for await (const res of client.watchSnapshot(
      { agent: "assistant", snapshotId: watched.snapshotId },
      { timeoutMs },
    )) {
      watched.statuses.push(res.status);
      if (res.status === SnapshotStatus.PENDING && watched.actedAt === 0) {
        await onPending(watched.snapshotId);
        watched.actedAt = Date.now();
      }
    }
  } catch (err) {
    watched.error = ConnectError.from(err);
  }
  return watched;
}
