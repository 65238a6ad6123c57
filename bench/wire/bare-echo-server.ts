/**
 * The baseline of `npm run bench:wire`: a bare connect-node server (h2c, the
 * same connect-node version as agentd) that implements only
 * `agentd.v1.AgentService/Chat`, as a plain bidi echo with agentd's message
 * shapes and sizes: for each input it answers the model chunks the echo model
 * would stream (`echo: <text>`, word by word) and a TurnEnd (snapshot and
 * session IDs of UUID size, turn index, the echo model's word-count usage),
 * every chunk with its stream sequence number as agentd numbers them, and
 * after the client half-closes, an output. The pieces and the usage come from
 * the echo model's own functions, so both servers send the same bytes. Like
 * agentd, it answers nothing to a request without input (the first request's
 * init): answering it would put one turn's reply in flight ahead of the
 * client, and the sequential rows would time a reply that was already sent.
 * It also answers `grpc.health.v1.Health/Check` with SERVING, so the health
 * probe's latencies under the same load have a baseline. No runtime, no
 * store, no logging, no interceptors.
 *
 * Run as its own process (`node --import tsx bench/wire/bare-echo-server.ts`)
 * so its CPU can be measured apart from the client; prints one JSON line
 * `{"listening": port}` on stdout, exits on SIGTERM.
 */
import { create } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http2";
import { Role } from "../../gen/ts/agentd/v1/content_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { AgentService, ChatResponseSchema } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { echoUsage, splitIntoChunks } from "../../src/models/echo-model.js";
import { usageToWire } from "../../src/protocol/usage-wire.js";
import {
  Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus,
} from "../../gen/ts/grpc/health/v1/health_pb.js";

function routes(router: ConnectRouter): void {
  router.service(Health, {
    check: () => create(HealthCheckResponseSchema, { status: HealthCheckResponse_ServingStatus.SERVING }),
  });
  router.service(AgentService, {
    async *chat(requests) {
      const sessionId = randomUUID();
      let turnIndex = 0;
      let sequence = 0;
      let snapshotId = "";
      for await (const request of requests) {
        if (!request.input) continue; // init alone: nothing to answer, as in agentd
        const part = request.input?.message?.content[0]?.kind;
        const text = part?.case === "text" ? part.value : "";
        const reply = `echo: ${text}`;
        for (const piece of splitIntoChunks(reply)) {
          yield create(ChatResponseSchema, {
            chunk: {
              sequence: ++sequence,
              modelChunk: { role: Role.MODEL, content: [{ kind: { case: "text", value: piece } }], index: 0 },
            },
          });
        }
        snapshotId = randomUUID();
        const usage = usageToWire(echoUsage(text, reply));
        yield create(ChatResponseSchema, {
          chunk: {
            sequence: ++sequence,
            turnEnd: { snapshotId, finishReason: FinishReason.STOP, turnIndex: turnIndex++, sessionId, usage },
          },
        });
      }
      yield create(ChatResponseSchema, {
        output: { sessionId, snapshotId, finishReason: FinishReason.STOP },
      });
    },
  });
}

const server = createServer(connectNodeAdapter({ routes }));
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ listening: typeof address === "object" && address ? address.port : 0 })}\n`);
});
process.on("SIGTERM", () => {
  server.close();
  process.exit(0);
});
