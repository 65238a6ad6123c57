import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BusyPolicy } from "../../gen/ts/agentd/v1/agent_pb.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import type { AgentdProcess } from "../harness/agentd-process.js";
import { AcknowledgedTurns, checkAcknowledged, startAgentdOnTap } from "../harness/mongo-crash-points.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { MongoWireTap } from "../harness/mongo-wire-tap.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

// SIGKILL while sessions chat on MongoDB, restart on the same database, chat on, then sweep with
// a zero grace: every acknowledged snapshot reads back and every session's latest loads. The
// issue's full size is KILL_SESSIONS=20 KILLS=4 KILL_TURNS_AFTER=40; CI runs a smaller one.
const SESSIONS = Number(process.env.KILL_SESSIONS ?? 6);
const KILLS = Number(process.env.KILLS ?? 2);
const TURNS_AFTER = Number(process.env.KILL_TURNS_AFTER ?? 5);
const DATABASE = "agentd_kill_acknowledged";

describe.skipIf(Boolean(process.env.MONGODB_URI))("SIGKILL while sessions chat on MongoDB", () => {
  let server: MongoJavaServer;
  let tap: MongoWireTap;
  let agentd: AgentdProcess | undefined;
  beforeAll(async () => {
    server = await MongoJavaServer.start();
    tap = await MongoWireTap.start(server.port);
  }, 300_000);
  afterAll(async () => {
    await agentd?.stop("SIGKILL");
    await tap?.close();
    await server?.stop();
  });

  it("keeps every acknowledged snapshot readable through kills, more turns and a zero-grace sweep", async () => {
    const acknowledged = new AcknowledgedTurns();
    const sessionIds: (string | undefined)[] = Array.from({ length: SESSIONS }, () => undefined);
    let inputs = 0;
    /** Each session chats turn after turn until `stop` says so; failures (the process died) end its loop. */
    const chat = async (slot: number, stop: () => boolean): Promise<void> => {
      const client = agentServiceClient(agentd!.baseUrl, "grpc");
      while (!stop()) {
        const input = `input ${++inputs}`;
        const sessionId = sessionIds[slot];
        try {
          const { output } = await client.run({
            init: { agent: "assistant", busyPolicy: BusyPolicy.INTERRUPT, ...(sessionId ? { sessionId } : {}) },
            input: textInput(input),
          });
          sessionIds[slot] = output!.sessionId;
          acknowledged.add(output!.sessionId, output!.snapshotId, input);
        } catch {
          return;
        }
      }
    };
    for (let kill = 0; kill < KILLS; kill++) {
      agentd = await startAgentdOnTap(tap, DATABASE);
      const victim = agentd;
      const before = acknowledged.count;
      const loops = sessionIds.map((_, slot) => chat(slot, () => false));
      // Kill once every session has had a few more turns acknowledged (mid-turn for most of them).
      while (acknowledged.count < before + SESSIONS * 3) await new Promise((r) => setTimeout(r, 20));
      await victim.stop("SIGKILL");
      await Promise.all(loops);
    }
    agentd = await startAgentdOnTap(tap, DATABASE);
    let turns = 0;
    await Promise.all(sessionIds.map((_, slot) => chat(slot, () => turns++ >= TURNS_AFTER * SESSIONS)));
    const store = new MongoSessionStore({ uri: server.uri, database: DATABASE, orphanGraceMs: 0 });
    try {
      for (let i = 0; i < 3; i++) await store.sweepExpired(Date.now());
    } finally {
      await store.close();
    }
    const violations = await checkAcknowledged(agentServiceClient(agentd.baseUrl, "grpc"), acknowledged);
    console.log(
      `kill test: ${SESSIONS} sessions, ${KILLS} kills, ${acknowledged.count} acknowledged snapshots, ` +
        `${violations.unreadable.length} unreadable, ${violations.brokenSessions.length} broken sessions`,
    );
    expect(violations).toEqual({ unreadable: [], brokenSessions: [], wrongHistory: [] });
  }, 600_000);
});
