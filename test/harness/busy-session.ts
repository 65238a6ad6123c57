import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { until } from "./until.js";

/** When the head of `sessionId` was last written: GetSession's `updatedAt`, in ms. */
export async function sessionWrittenAt(client: Client<typeof AgentService>, sessionId: string): Promise<number> {
  const { session } = await client.getSession({ sessionId });
  return session?.updatedAt ? timestampMs(session.updatedAt) : 0;
}

/**
 * Resolves once a call sent with BUSY_POLICY_ENQUEUE waits in line for the
 * busy session `sessionId`. Joining the line writes the caller into the
 * session's head, which moves the session's `updatedAt` past `writtenAt`
 * ({@link sessionWrittenAt}, read after the holder's last turn and before
 * the call is sent): nothing else writes the head while its holder idles
 * between turns, until the holder refreshes its lease 5 s after taking it.
 * So this gives up after 4 s rather than mistake that refresh for the call.
 */
export async function untilQueued(
  client: Client<typeof AgentService>,
  sessionId: string,
  writtenAt: number,
): Promise<void> {
  await until(
    `a queued call to join the line of session ${sessionId} (the session's head was not written)`,
    async () => (await sessionWrittenAt(client, sessionId)) > writtenAt,
    { timeoutMs: 4_000, intervalMs: 10 },
  );
}
