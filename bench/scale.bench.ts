/**
 * Scale benchmark (`npm run bench:scale`): MongoDB coordination traffic of N
 * agentd processes (compiled CLI, each its own process) on one MongoDB
 * (mongo-java-server as a replica set), each instance's traffic counted by a
 * wire tap of its own (test/harness/mongo-wire-tap.ts: a TCP proxy reading
 * the OP_MSG commands agentd sends).
 *
 * For each watcher count M (per instance): J detached jobs are started
 * (round-robin over the instances; the echo model streams one chunk per word
 * every ECHO_DELAY_MS, so each job runs the whole window), then every
 * instance gets M followers of those jobs (3/4 AttachInvocation, 1/4
 * WatchSnapshot), jobs started on other instances included. Once every
 * follower has had its first answer the taps are reset and the window
 * (WINDOW_S) is measured. Per instance it prints: change streams opened in
 * total (setup included), connections to MongoDB (peak and open at the end),
 * MongoDB commands per minute, write statements per minute (inserted
 * documents, update/delete statements: one oplog entry each, as every update
 * matches one document), heartbeat writes (updates of snapshots rows and of
 * chunk keep documents) per heartbeat; and, once, the commands and write
 * statements of one ordinary turn (a Run on an existing session, measured
 * before the jobs start). "heartbeat writes/heartbeat" counts every update of
 * a snapshots row and of a chunk keep document in the window over the
 * heartbeats due: an overloaded host adds takeover and status writes to it.
 *
 * Not a test: nothing is asserted. Environment: INSTANCES (default 2),
 * WATCHERS (per instance, comma-separated runs; default 10,50), JOBS
 * (default 10), WINDOW_S (default 10), HEARTBEAT_MS (default 1000),
 * BENCH_CLI=source (src through tsx instead of dist).
 */
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService } from "../gen/ts/agentd/v1/agent_service_pb.js";
import { MongoJavaServer } from "../test/harness/mongo-java-server.js";
import { MongoWireTap, type WireCounts } from "../test/harness/mongo-wire-tap.js";
import { textInput } from "../test/harness/wire-chat.js";
import { startAgentdProcess, type ServerProcess } from "./wire/server-process.js";

const INSTANCES = Number(process.env.INSTANCES ?? 2);
const WATCHER_RUNS = (process.env.WATCHERS ?? "10,50").split(",").map(Number);
const JOBS = Number(process.env.JOBS ?? 10);
const WINDOW_S = Number(process.env.WINDOW_S ?? 10);
const HEARTBEAT_MS = Number(process.env.HEARTBEAT_MS ?? 1000);
const CLI = process.env.BENCH_CLI === "source" ? "source" : "built";
const ECHO_DELAY_MS = 100;
const STREAMS_PER_CONNECTION = 50;

interface Instance {
  tap: MongoWireTap;
  server: ServerProcess;
  client: ReturnType<typeof createClient<typeof AgentService>>;
}

async function startInstance(mongo: MongoJavaServer, i: number, database: string): Promise<Instance> {
  const tap = await MongoWireTap.start(mongo.port);
  const uri = `mongodb://127.0.0.1:${tap.port}/${database}?directConnection=true`;
  const server = await startAgentdProcess(`agentd-${i}`, uri, "warn", {
    cli: CLI,
    args: ["--heartbeat-interval-ms", String(HEARTBEAT_MS)],
  });
  const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl }));
  return { tap, server, client };
}

/** Starts `JOBS` detached jobs lasting at least the window, round-robin over the instances. */
async function startJobs(instances: Instance[]): Promise<string[]> {
  const words = Array.from({ length: Math.ceil(((WINDOW_S + 240) * 1000) / ECHO_DELAY_MS) }, (_, i) => `w${i}`);
  const jobs: string[] = [];
  for (let j = 0; j < JOBS; j++) {
    const { output } = await instances[j % instances.length]!.client.run({
      init: { agent: "assistant" },
      input: { ...textInput(words.join(" "), { echoDelayMs: ECHO_DELAY_MS }), detach: true },
    });
    jobs.push(output!.snapshotId);
  }
  return jobs;
}

/** M followers per instance; resolves once each has its first answer, with a function that ends them. */
async function follow(instances: Instance[], jobs: string[], perInstance: number): Promise<() => Promise<void>> {
  const controller = new AbortController();
  let answered = 0;
  const streams: Promise<void>[] = [];
  const consume = async (stream: AsyncIterable<unknown>): Promise<void> => {
    let first = true;
    try {
      for await (const _ of stream) {
        if (first) answered++;
        first = false;
      }
    } catch {
      // aborted at the end of the run
    }
  };
  instances.forEach((instance, i) => {
    // One HTTP/2 connection per STREAMS_PER_CONNECTION followers (a server allows 100 concurrent streams per connection).
    const clients = Array.from({ length: Math.ceil(perInstance / STREAMS_PER_CONNECTION) }, () =>
      createClient(AgentService, createGrpcTransport({ baseUrl: instance.server.baseUrl })),
    );
    for (let w = 0; w < perInstance; w++) {
      const client = clients[Math.floor(w / STREAMS_PER_CONNECTION)]!;
      const snapshotId = jobs[(w + i) % jobs.length]!;
      const options = { signal: controller.signal, timeoutMs: 0 };
      streams.push(
        consume(
          w % 4 === 3
            ? client.watchSnapshot({ agent: "assistant", snapshotId }, options)
            : client.attachInvocation({ agent: "assistant", snapshotId }, options),
        ),
      );
    }
  });
  const total = instances.length * perInstance;
  const deadline = Date.now() + 300_000;
  while (answered < total) {
    if (Date.now() > deadline) throw new Error(`only ${answered} of ${total} followers answered within 300 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return async () => {
    controller.abort();
    await Promise.all(streams);
  };
}

function count(counts: WireCounts, prefix: string): number {
  let n = 0;
  for (const [key, value] of counts.commands) if (key.startsWith(prefix)) n += value;
  return n;
}

function commandsIn(counts: WireCounts): number {
  let n = 0;
  for (const [key, value] of counts.commands) if (!/^(hello|ismaster|isMaster) /.test(`${key} `)) n += value;
  return n;
}

async function oneTurn(instance: Instance): Promise<{ commands: number; writes: number }> {
  const first = await instance.client.run({ init: { agent: "assistant" }, input: textInput("warm up") }); // a new session
  instance.tap.reset();
  await instance.client.run({
    init: { agent: "assistant", sessionId: first.output!.sessionId },
    input: textInput("one more turn"),
  });
  const counts = instance.tap.snapshot;
  return { commands: commandsIn(counts), writes: counts.writeStatements };
}

async function run(mongo: MongoJavaServer, perInstance: number): Promise<void> {
  const database = `agentd_scale_${perInstance}_${Date.now()}`;
  const instances = await Promise.all(Array.from({ length: INSTANCES }, (_, i) => startInstance(mongo, i, database)));
  try {
    const turn = await oneTurn(instances[0]!); // before any job: only the turn's own traffic
    const jobs = await startJobs(instances);
    const stop = await follow(instances, jobs, perInstance);
    const streamsAtSetup = instances.map((instance) => instance.tap.snapshot.changeStreams);
    for (const instance of instances) instance.tap.reset();
    await new Promise((resolve) => setTimeout(resolve, WINDOW_S * 1000));
    const window = instances.map((instance) => instance.tap.snapshot);
    await stop();
    const perMinute = (n: number): string => ((n * 60) / WINDOW_S).toFixed(0);
    console.log(
      `\n${INSTANCES} instances × ${perInstance} watchers (${JOBS} jobs, heartbeat ${HEARTBEAT_MS} ms, window ${WINDOW_S} s):`,
    );
    console.log(
      "instance | change streams | connections peak/open | commands/min | write stmts/min | heartbeat writes/heartbeat | chunk-keep updates/min",
    );
    window.forEach((counts, i) => {
      const jobsHere = jobs.filter((_, j) => j % INSTANCES === i).length;
      const heartbeats = (jobsHere * WINDOW_S * 1000) / HEARTBEAT_MS;
      const keeps = count(counts, "update stream_chunks");
      const rowBeats = count(counts, "update snapshots") + count(counts, "findAndModify snapshots");
      console.log(
        `${i} | ${streamsAtSetup[i]! + counts.changeStreams} | ${Math.max(counts.peakConnections, 0)}/${counts.openConnections} | ` +
          `${perMinute(commandsIn(counts))} | ${perMinute(counts.writeStatements)} | ` +
          `${heartbeats > 0 ? ((keeps + rowBeats) / heartbeats).toFixed(2) : "—"} | ${perMinute(keeps)}`,
      );
    });
    const top = [...window[0]!.commands].sort((a, b) => b[1] - a[1]).slice(0, 8);
    console.log(`instance 0 commands in the window: ${top.map(([k, v]) => `${k}=${v}`).join(", ")}`);
    console.log(
      `one ordinary turn (instance 0, before the jobs): ${turn.commands} commands, ${turn.writes} write statements`,
    );
  } finally {
    await Promise.all(instances.map(async (instance) => (await instance.server.stop(), await instance.tap.close())));
  }
}

const mongo = await MongoJavaServer.start(0, { replicaSet: "rs0" });
try {
  for (const perInstance of WATCHER_RUNS) await run(mongo, perInstance);
} finally {
  await mongo.stop();
}
