import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AgentService, type ChatRequestSchema } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { AsyncChannel } from "../../src/streams/async-channel.js";
import { createAgentClient } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";

type ChatRequestInit = MessageInitShape<typeof ChatRequestSchema>;

/** Runs per protocol and client: each must see the in-band failure (issue 47). */
const RUNS = 20;
/** Past the 1 KiB session cap the server runs with: the second turn of every conversation fails RESOURCE_EXHAUSTED. */
const TOO_BIG = "x".repeat(4000);

const plainTransports = {
  grpc: (baseUrl: string) => createGrpcTransport({ baseUrl }),
  "connect-h2": (baseUrl: string) => createConnectTransport({ baseUrl, httpVersion: "2" }),
  "grpc-web-h2": (baseUrl: string) => createGrpcWebTransport({ baseUrl, httpVersion: "2" }),
} as const;

const agentdProtocols = [
  { name: "grpc", options: { protocol: "grpc" } },
  { name: "connect-h2", options: { protocol: "connect", httpVersion: "2" } },
  { name: "grpc-web-h2", options: { protocol: "grpc-web", httpVersion: "2" } },
] as const;

/** What a client saw of a conversation whose second turn failed in-band. */
interface Seen {
  finishReason?: FinishReason | string;
  status?: string;
  thrown?: string;
}

for (const store of ["memory", "sqlite"] as const) {
  describe(`${store} store: a turn that fails in-band while the client's request side is open is seen as that failure`, () => {
    let server: AgentdProcess;
    let dir: string | undefined;
    beforeAll(async () => {
      dir = store === "sqlite" ? await mkdtemp(join(tmpdir(), "agentd-in-band-")) : undefined;
      server = await startAgentd({
        args: ["--store", dir ? `sqlite:${dir}/agentd.db` : "memory:", "--max-session-bytes", "1024"],
      });
    });
    afterAll(async () => {
      await server?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it.each(Object.keys(plainTransports) as (keyof typeof plainTransports)[])(
      `plain connect-es client, %s: ${RUNS} of ${RUNS} Chats report the failed turn's RESOURCE_EXHAUSTED`,
      { timeout: 120_000 },
      async (protocol) => {
        const client = createClient(AgentService, plainTransports[protocol](server.baseUrl));
        const seen: Seen[] = [];
        for (let run = 0; run < RUNS; run++) {
          const requests = new AsyncChannel<ChatRequestInit>();
          requests.push({ init: { agent: "assistant" }, input: textInput("hello") });
          requests.push({ input: textInput(TOO_BIG) });
          try {
            let output;
            for await (const response of client.chat(requests, { timeoutMs: 30_000 }))
              if (response.output) output = response.output;
            seen.push({ finishReason: output?.finishReason, status: output?.error?.status });
          } catch (err) {
            seen.push({ thrown: ConnectError.from(err).message });
          } finally {
            requests.close(); // the request side stayed open until the call was over
          }
        }
        expect(seen).toEqual(Array(RUNS).fill({ finishReason: FinishReason.FAILED, status: "RESOURCE_EXHAUSTED" }));
      },
    );

    it.each(agentdProtocols)(
      `agentd's TypeScript client, $name: ${RUNS} of ${RUNS} conversations report the failed turn's RESOURCE_EXHAUSTED`,
      { timeout: 120_000 },
      async ({ options }) => {
        const client = createAgentClient(server.baseUrl, options);
        const seen: Seen[] = [];
        for (let run = 0; run < RUNS; run++) {
          const conversation = client.chat("assistant");
          try {
            expect((await conversation.send("hello")).finishReason).toBe("stop");
            const failed = await conversation.send(TOO_BIG);
            expect(failed.finishReason).toBe("failed");
            // The request side is still open here; output() half-closes it only now.
            const output = await conversation.output();
            seen.push({ finishReason: output.finishReason, status: output.error?.status });
          } catch (err) {
            seen.push({ thrown: ConnectError.from(err).message });
          }
        }
        expect(seen).toEqual(Array(RUNS).fill({ finishReason: "failed", status: "RESOURCE_EXHAUSTED" }));
      },
    );
  });
}
