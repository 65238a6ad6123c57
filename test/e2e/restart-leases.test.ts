import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ChatRequestSchema } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { Role } from "../../gen/ts/agentd/v1/content_pb.js";
import { AsyncChannel } from "../../src/streams/async-channel.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

type ChatRequestInit = MessageInitShape<typeof ChatRequestSchema>;

/** The input the killed instance was running: its retry carries the same request ID and content. */
const slowInput = {
  ...textInput("slow turn of eight words, one per second", { echoDelayMs: 1_000 }),
  requestId: "issue-47-slow-input",
};

/**
 * Issue 47, item 2: a SIGKILLed instance's lease on a session (15 s by
 * default) must not keep the session busy once a new instance runs: the new
 * one recognises the dead holder (same machine, pid gone) and takes the
 * session at once. Without that, a call with busy policy REJECT is refused
 * ABORTED until the lease expires.
 */
describe.each(["sqlite", "mongodb"] as const)(
  "%s store: a restarted instance frees the sessions its killed predecessor held",
  (kind) => {
    let store: string;
    let dir: string | undefined;
    let mongo: MongoJavaServer | undefined;
    const started: AgentdProcess[] = [];
    beforeAll(async () => {
      if (kind === "sqlite") {
        dir = await mkdtemp(join(tmpdir(), "agentd-restart-leases-"));
        store = `sqlite:${dir}/agentd.db`;
      } else {
        mongo = await MongoJavaServer.start(0, { replicaSet: "rs0" });
        store = `${mongo.uri.replace(/\/?(\?|$)/, "/agentd_restart_leases$1")}`;
      }
    });
    afterAll(async () => {
      for (const server of started) await server.stop("SIGKILL");
      await mongo?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it(
      "a session busy on the killed instance is free on its successor; the killed turn's retry runs once",
      { timeout: 120_000 },
      async () => {
        const first = await startAgentd({ args: ["--store", store] });
        started.push(first);
        const before = agentServiceClient(first.baseUrl, "grpc");
        const { output: hello } = await before.run({ init: { agent: "assistant" }, input: textInput("hello") });
        const sessionId = hello!.sessionId;

        // A Chat on the first instance runs the slow input, holding the session's lease.
        const requests = new AsyncChannel<ChatRequestInit>();
        requests.push({ init: { agent: "assistant", sessionId }, input: slowInput });
        const responses = before.chat(requests)[Symbol.asyncIterator]();
        // Its first chunk: the turn runs (the lease is taken before it starts).
        expect((await responses.next()).done).toBe(false);
        const chat = (async () => {
          for (let r = await responses.next(); !r.done; r = await responses.next());
        })().catch(() => undefined);
        // The session is busy: a call with another input is refused (REJECT, the default policy).
        const busy = await before
          .run({ init: { agent: "assistant", sessionId }, input: textInput("probe") })
          .then(() => undefined)
          .catch((err: unknown) => ConnectError.from(err).code);
        expect(busy).toBe(Code.Aborted);

        await first.stop("SIGKILL");
        await chat;
        requests.close();
        const second = await startAgentd({ args: ["--store", store] });
        started.push(second);
        const after = agentServiceClient(second.baseUrl, "grpc");

        // The dead instance's lease does not make the session busy (it had not expired: 15 s).
        const { output: next } = await after.run({ init: { agent: "assistant", sessionId }, input: textInput("next") });
        expect(next?.finishReason).toBe(FinishReason.STOP);
        // The input the killed instance was running, retried: it never committed there, so it runs now, once.
        const { output: retried } = await after.run({ init: { agent: "assistant", sessionId }, input: slowInput });
        expect(retried?.finishReason).toBe(FinishReason.STOP);
        const { output: again } = await after.run({ init: { agent: "assistant", sessionId }, input: slowInput });
        expect(again?.snapshotId).toBe(retried?.snapshotId);
        const { snapshot } = await after.getSnapshot({ agent: "assistant", sessionId });
        const texts = snapshot!
          .state!.messages.filter((m) => m.role === Role.USER)
          .map((m) => JSON.stringify(m.content));
        expect(texts.filter((t) => t.includes("slow turn"))).toHaveLength(1);
      },
    );
  },
);
