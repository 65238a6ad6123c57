/**
 * The load `npm run bench:wire` puts on a server: gRPC (h2c) Chat streams of
 * the `assistant` agent (echo model), one short user message per turn, each
 * turn complete when its TurnEnd arrives. Works against agentd and the bare
 * echo server alike (same service, same messages).
 */
import { create } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { performance } from "node:perf_hooks";
import { Role } from "../../gen/ts/agentd/v1/content_pb.js";
import {
  AgentService,
  ChatRequestSchema,
  type ChatRequest,
  type ChatResponse,
} from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { AsyncChannel } from "../../src/streams/async-channel.js";
import type { ServerProcess } from "./server-process.js";

/** The user message of every turn (short: a few words). */
export const MESSAGE = "hello there, how are you today?";
/** What the echo model (and the bare server) stream back for {@link MESSAGE}. */
const REPLY = `echo: ${MESSAGE}`;
/** HTTP/2 connections carry at most this many sessions (agentd advertises 100 streams per connection). */
const SESSIONS_PER_CONNECTION = 50;

const FIRST = create(ChatRequestSchema, { init: { agent: "assistant" } });
const INPUT = create(ChatRequestSchema, {
  input: { message: { role: Role.USER, content: [{ kind: { case: "text", value: MESSAGE } }] } },
});
/**
 * BENCH_REQUEST_IDS=1 (the default): every input carries a fresh request ID, as agentd's
 * clients send them (the server then keeps a window of committed request IDs per session);
 * 0: none.
 */
const REQUEST_IDS = (process.env.BENCH_REQUEST_IDS ?? "1") !== "0";
let requestCounter = 0;
/** The input of one turn: {@link INPUT}, with a request ID unless BENCH_REQUEST_IDS=0. */
function nextInput(): ChatRequest {
  if (!REQUEST_IDS) return INPUT;
  return create(ChatRequestSchema, {
    input: { ...INPUT.input!, requestId: `bench-${process.pid}-${++requestCounter}` },
  });
}

/** One open Chat stream of the `assistant` agent, driven turn by turn with {@link MESSAGE}. */
export class ChatSession {
  private readonly requests = new AsyncChannel<ChatRequest>();
  private readonly responses: AsyncIterator<ChatResponse>;

  constructor(client: Client<typeof AgentService>) {
    this.requests.push(FIRST);
    this.responses = client.chat(this.requests)[Symbol.asyncIterator]();
  }

  /**
   * Sends the message and reads until its TurnEnd. Throws unless the text
   * streamed before that TurnEnd is the echo of this message: a server that
   * answered anything else (or answered ahead of the input) would be timed
   * on the wrong work. `observe` sees every response of the turn, its TurnEnd
   * included.
   */
  async turn(observe?: (response: ChatResponse) => void): Promise<void> {
    this.requests.push(nextInput());
    let text = "";
    for (;;) {
      const next = await this.responses.next();
      if (next.done) throw new Error("stream ended before TurnEnd");
      observe?.(next.value);
      const chunk = next.value.chunk;
      for (const part of chunk?.modelChunk?.content ?? []) if (part.kind.case === "text") text += part.kind.value;
      if (!chunk?.turnEnd) continue;
      if (text !== REPLY)
        throw new Error(`the turn streamed ${JSON.stringify(text)}, not the echo ${JSON.stringify(REPLY)}`);
      return;
    }
  }

  /** Half-closes and reads the output and the end of the stream. */
  async finish(): Promise<void> {
    this.requests.close();
    for (;;) if ((await this.responses.next()).done) return;
  }
}

function clients(baseUrl: string, count: number): Client<typeof AgentService>[] {
  return Array.from({ length: count }, () => createClient(AgentService, createGrpcTransport({ baseUrl })));
}

/** Per-turn latencies (ms) of `turns` sequential turns on one Chat stream, after `warmup` uncounted ones. */
export async function sequentialTurns(server: ServerProcess, turns: number, warmup: number): Promise<number[]> {
  const [client] = clients(server.baseUrl, 1);
  const session = new ChatSession(client!);
  for (let i = 0; i < warmup; i++) await session.turn();
  const times: number[] = [];
  for (let i = 0; i < turns; i++) {
    const t0 = performance.now();
    await session.turn();
    times.push(performance.now() - t0);
  }
  await session.finish();
  return times;
}

/** Result of {@link concurrentTurns}. */
export interface Throughput {
  turns: number;
  serverCpuSeconds: number;
  /** The kernel (system) part of `serverCpuSeconds`. */
  serverKernelCpuSeconds: number;
  wallSeconds: number;
}

/**
 * `sessions` concurrent workers, each running Chat sessions of
 * `turnsPerSession` turns back to back until `totalTurns` turns are done in
 * all; the server's CPU time (utime + stime) is read around the whole run.
 */
export async function concurrentTurns(
  server: ServerProcess,
  sessions: number,
  totalTurns: number,
  turnsPerSession: number,
): Promise<Throughput> {
  const pool = clients(server.baseUrl, Math.ceil(sessions / SESSIONS_PER_CONNECTION));
  let remaining = totalTurns;
  const worker = async (index: number): Promise<void> => {
    const client = pool[index % pool.length]!;
    while (remaining > 0) {
      const session = new ChatSession(client);
      for (let t = 0; t < turnsPerSession && remaining > 0; t++) {
        remaining--;
        await session.turn();
      }
      await session.finish();
    }
  };
  const cpu0 = server.cpuSeconds();
  const kernel0 = server.kernelCpuSeconds();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: sessions }, (_, i) => worker(i)));
  const wallSeconds = (performance.now() - t0) / 1000;
  return {
    turns: totalTurns,
    serverCpuSeconds: server.cpuSeconds() - cpu0,
    serverKernelCpuSeconds: server.kernelCpuSeconds() - kernel0,
    wallSeconds,
  };
}
