import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BusyPolicy } from "../../gen/ts/agentd/v1/agent_pb.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import type { AgentdProcess } from "../harness/agentd-process.js";
import {
  AcknowledgedTurns,
  checkAcknowledged,
  commandKey,
  isFlowCommand,
  occurrenceAt,
  recordFlow,
  startAgentdOnTap,
} from "../harness/mongo-crash-points.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { MongoWireTap, type FailAction } from "../harness/mongo-wire-tap.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

// A failpoint harness: for every MongoDB command an ordinary turn sends, the agentd process is
// killed before the command reaches the server ("hold"), killed after the server applied it but
// before its reply arrived ("hold-after"), or the command fails transiently with the process alive
// ("cut-before", "cut-after"). After each, on a restarted process: every acknowledged turn reads
// back, through sweeps with a zero grace and after its session's head moved on 40 more times;
// every session's latest snapshot loads and resumes; no turn is applied twice.
const DATABASE = "agentd_failpoints";

/** `<key>#<occurrence>` of each command of a recorded flow. */
function occurrencesOf(keys: string[]): string[] {
  return keys.map((_, index) => {
    const { key, occurrence } = occurrenceAt(keys, index);
    return `${key}#${occurrence}`;
  });
}
const AGENT = "assistant";

describe.skipIf(Boolean(process.env.MONGODB_URI))("crashing at every MongoDB command of a turn", () => {
  let server: MongoJavaServer;
  let tap: MongoWireTap;
  let agentd: AgentdProcess | undefined;
  const acknowledged = new AcknowledgedTurns();
  let inputs = 0;
  const timings: string[] = [];

  beforeAll(async () => {
    server = await MongoJavaServer.start();
    tap = await MongoWireTap.start(server.port);
  }, 300_000);
  afterAll(async () => {
    if (process.env.FAILPOINT_TIMINGS) console.log(timings.join("\n"));
    await agentd?.stop("SIGKILL");
    await tap?.close();
    await server?.stop();
  });

  const client = () => agentServiceClient(agentd!.baseUrl, "grpc");
  /** One turn; recorded as acknowledged when the call returns its output. */
  const turn = async (sessionId?: string): Promise<string | undefined> => {
    const input = `input ${++inputs}`;
    const { output } = await client().run({
      // INTERRUPT: a crashed process's lease does not hold the session up.
      init: { agent: AGENT, busyPolicy: BusyPolicy.INTERRUPT, ...(sessionId ? { sessionId } : {}) },
      input: textInput(input),
    });
    acknowledged.add(output!.sessionId, output!.snapshotId, input);
    return output!.sessionId;
  };
  /** Another store instance (a restarted process), for head writes and sweeps. */
  const withStore = async (op: (store: MongoSessionStore) => Promise<void>): Promise<void> => {
    const store = new MongoSessionStore({ uri: server.uri, database: DATABASE, orphanGraceMs: 0 });
    try {
      await op(store);
    } finally {
      await store.close();
    }
  };
  /** Moves the session's head on `moves` times (lease-like writes: same fields, new version). */
  const moveHead = (sessionId: string, moves: number) =>
    withStore(async (store) => {
      for (let i = 0; i < moves; i++) {
        const head = (await store.getHead(sessionId))!;
        const { version, ...fields } = head;
        await store.commit({ expectedVersion: version, head: { ...fields, updatedAt: head.updatedAt + 1 } });
      }
    });
  /** Two zero-grace sweeps. */
  const sweep = () =>
    withStore(async (store) => {
      for (let i = 0; i < 2; i++) await store.sweepExpired(Date.now());
    });

  it.each([
    ["killed before the command is sent, or after it was applied but before its reply", ["hold", "hold-after"]],
    ["a transient failure before or after the command was applied", ["cut-before", "cut-after"]],
  ] as [string, FailAction[]][])(
    "keeps every acknowledged turn: %s",
    async (_title, modes) => {
      agentd ??= await startAgentdOnTap(tap, DATABASE);
      const warm = await turn();
      const keys = await recordFlow(tap, () => turn(warm));
      // A second recording: a write only one of them saw is timing-driven (a lease refresh or the
      // settlement's token flush falling inside a slow turn) and is not required to recur below.
      const again = new Set(occurrencesOf(await recordFlow(tap, () => turn(warm))));
      expect(keys).toContain("update heads");
      expect(keys).toContain("insert snapshots");
      const hits: string[] = [];
      for (let index = 0; index < keys.length; index++) {
        const { key, occurrence } = occurrenceAt(keys, index);
        for (const mode of modes) {
          const started = Date.now();
          const sessionId = (await turn())!;
          let seen = 0;
          let hit = false;
          const crash = mode === "hold" || mode === "hold-after";
          tap.failpoint = (command) => {
            if (hit || !isFlowCommand(command) || commandKey(command) !== key || seen++ !== occurrence) return "pass";
            hit = true;
            return mode;
          };
          const victim = agentd!;
          tap.onFailpoint = () => {
            if (crash) victim.proc.kill("SIGKILL");
          };
          await turn(sessionId).catch(() => undefined); // acknowledged or not: the check knows which
          tap.failpoint = undefined;
          tap.onFailpoint = undefined;
          if (hit) hits.push(`${key}#${occurrence} ${mode}`);
          if (crash && hit) {
            await victim.stop("SIGKILL");
            tap.cutHeld();
            agentd = await startAgentdOnTap(tap, DATABASE);
          }
          await turn(sessionId); // the session resumes: its head moves past the turn the failpoint hit
          const expected = {
            failpoint: `${key}#${occurrence} ${mode}`,
            unreadable: [],
            brokenSessions: [],
            wrongHistory: [],
          };
          // After 40 more head writes (past any sliding window), then again after zero-grace sweeps.
          await moveHead(sessionId, 40);
          expect({
            failpoint: expected.failpoint,
            ...(await checkAcknowledged(client(), acknowledged, [sessionId])),
          }).toEqual(expected);
          await sweep();
          expect({
            failpoint: expected.failpoint,
            ...(await checkAcknowledged(client(), acknowledged, [sessionId])),
          }).toEqual(expected);
          timings.push(`${key}#${occurrence} ${mode}: ${Date.now() - started} ms`);
        }
      }
      // Every write of the turn was hit in every mode (a flow that changed shape fails here); reads of
      // background work (a chunk-log probe) and the settlement's timer-driven token flush may not
      // recur in every turn.
      const writes = keys
        .map((_, index) => occurrenceAt(keys, index))
        .filter(({ key }) => /^(insert|update|delete|findAndModify) /.test(key) && !key.endsWith(" settle"))
        .filter(({ key, occurrence }) => again.has(`${key}#${occurrence}`));
      expect(writes.map(({ key }) => key)).toEqual(expect.arrayContaining(["update heads", "insert snapshots"]));
      for (const { key, occurrence } of writes)
        for (const mode of modes) expect(hits).toContain(`${key}#${occurrence} ${mode}`);
      await sweep();
      expect(await checkAcknowledged(client(), acknowledged)).toEqual({
        unreadable: [],
        brokenSessions: [],
        wrongHistory: [],
      });
    },
    900_000,
  );
});
