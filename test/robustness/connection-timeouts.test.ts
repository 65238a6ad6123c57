import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import * as net from "node:net";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Serving } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { parseCommandLine, USAGE, UsageError } from "../../src/cli/args.js";
import { DEFAULT_CONNECTION_LIMITS } from "../../src/server/connection-limits.js";
import { startServer } from "../../src/server/server.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { chunksText, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { frame, openSession, rawRequest } from "./raw-rpc.js";

/**
 * Connection timeouts on every path through the protocol sniffer, against a
 * real `agentd serve` with short limits: silent and half-preface connections,
 * trickled HTTP/1.1 headers, idle keep-alive and idle HTTP/2 sessions are
 * closed; quiet streams in flight are not; connections over the cap are
 * closed at once.
 */

const FIRST_BYTES_MS = 500;
const HEADERS_MS = 800;
const IDLE_MS = 600;
/** Node adds its keepAliveTimeoutBuffer (1 s) to the HTTP/1.1 keep-alive timeout. */
const KEEP_ALIVE_BUFFER_MS = 1000;
/**
 * How long a test waits for the server to close a connection before it gives up: generous for a
 * loaded machine, and shorter than every default timeout (10 s first bytes, 30 s headers, 60 s
 * idle), so a close by a default timer, or none, fails the test. A close is not timed from above:
 * the lower bounds tell which timer closed it.
 */
const GIVE_UP_MS = 8_000;
/**
 * How long the "quiet stream" tests stay silent: 3x the idle timeout, past
 * HTTP/1.1 keep-alive with Node's buffer, past 2x the headers timeout, and
 * past the HTTP/2 idle close plus its 1 s destroy fallback.
 */
const QUIET_MS = Math.max(3 * IDLE_MS, IDLE_MS + KEEP_ALIVE_BUFFER_MS + 200, 2 * HEADERS_MS);

const LIMIT_ARGS = [
  "--first-bytes-timeout-ms",
  String(FIRST_BYTES_MS),
  "--headers-timeout-ms",
  String(HEADERS_MS),
  "--idle-timeout-ms",
  String(IDLE_MS),
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A connected raw TCP socket to the server. */
function connectRaw(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.on("error", () => {});
    socket.once("connect", () => resolve(socket));
    socket.once("close", () => reject(new Error("closed before connect")));
  });
}

/**
 * Milliseconds from `since` until `socket` closed, or Infinity if it is still
 * open `giveUpMs` after `since` (then it is destroyed).
 */
function closeTime(socket: net.Socket, since: number, giveUpMs: number): Promise<number> {
  return new Promise((resolve) => {
    if (socket.destroyed && socket.closed) return resolve(performance.now() - since);
    const timer = setTimeout(
      () => {
        resolve(Infinity);
        socket.destroy();
      },
      Math.max(0, since + giveUpMs - performance.now()),
    );
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(performance.now() - since);
    });
  });
}

/** The server closed the connection: `elapsed` is not the Infinity of a test that gave up waiting. */
function expectClosedByServer(elapsed: number): void {
  expect(elapsed, `closed by the server within the test's ${GIVE_UP_MS} ms`).toBeLessThan(Infinity);
}

/** Everything `socket` receives, as latin1 text so far. */
function collect(socket: net.Socket): () => string {
  let text = "";
  socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
  return () => text;
}

const HTTP2_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

describe("connection timeouts", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({ args: [...LIMIT_ARGS] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("closes a connection that sends nothing within the first-bytes timeout", async () => {
    const socket = await connectRaw(server.port);
    const since = performance.now();
    const elapsed = await closeTime(socket, since, GIVE_UP_MS);
    console.log(`idle TCP socket closed after ${elapsed.toFixed(0)} ms (first-bytes timeout ${FIRST_BYTES_MS})`);
    expect(elapsed).toBeGreaterThanOrEqual(FIRST_BYTES_MS - 50);
    expectClosedByServer(elapsed);
  });

  it("closes a partial HTTP/2 preface, even one that keeps trickling, at the first-bytes timeout", async () => {
    const socket = await connectRaw(server.port);
    const since = performance.now();
    let sent = 0;
    // One preface byte every 100 ms: 2.4 s for all 24, never complete before the deadline.
    const trickle = setInterval(() => {
      if (sent < HTTP2_PREFACE.length - 1 && !socket.destroyed) socket.write(HTTP2_PREFACE[sent++]!);
    }, 100);
    const elapsed = await closeTime(socket, since, GIVE_UP_MS);
    clearInterval(trickle);
    console.log(
      `partial HTTP/2 preface (${sent} bytes) closed after ${elapsed.toFixed(0)} ms (first-bytes timeout ${FIRST_BYTES_MS})`,
    );
    expect(sent).toBeGreaterThan(0);
    // Closed while the bytes still trickled in (the last of 23 goes at 2.3 s): a timer that each byte
    // restarted would close only after the trickle stopped.
    expect(sent).toBeLessThan(HTTP2_PREFACE.length - 1);
    expect(elapsed).toBeGreaterThanOrEqual(FIRST_BYTES_MS - 50);
    expectClosedByServer(elapsed);
  });

  it("closes an HTTP/1.1 client trickling header bytes within the headers timeout", async () => {
    const socket = await connectRaw(server.port);
    const received = collect(socket);
    const request = `GET /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: x\r\nX-Slow: ${"a".repeat(200)}`;
    // The first byte now ("G" is no HTTP/2 preface prefix: HTTP/1.1 at once, and the headers clock starts), then one every 100 ms.
    const since = performance.now();
    socket.write(request[0]!);
    let sent = 1;
    const trickle = setInterval(() => {
      if (sent < request.length && !socket.destroyed) socket.write(request[sent++]!);
    }, 100);
    const elapsed = await closeTime(socket, since, GIVE_UP_MS);
    clearInterval(trickle);
    console.log(
      `trickled HTTP/1.1 headers (${sent} bytes) closed after ${elapsed.toFixed(0)} ms (headers timeout ${HEADERS_MS})`,
    );
    expect(received()).toMatch(/^HTTP\/1\.1 408 /);
    // Handed to HTTP/1.1 at the first byte: the first-bytes timeout (shorter) no longer applies.
    expect(elapsed).toBeGreaterThanOrEqual(HEADERS_MS - 50);
    expectClosedByServer(elapsed);
  });

  it("closes an idle HTTP/1.1 keep-alive connection after its request, within the idle timeout", async () => {
    const socket = await connectRaw(server.port);
    const received = collect(socket);
    socket.write(
      "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
    );
    const deadline = performance.now() + 3000;
    while (!received().includes('"SERVING"') && performance.now() < deadline) await sleep(5);
    const since = performance.now();
    expect(received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(received()).toMatch(/keep-alive/i);
    const elapsed = await closeTime(socket, since, GIVE_UP_MS);
    console.log(
      `idle HTTP/1.1 keep-alive closed after ${elapsed.toFixed(0)} ms (idle timeout ${IDLE_MS} + Node's ${KEEP_ALIVE_BUFFER_MS} ms buffer)`,
    );
    expect(elapsed).toBeGreaterThanOrEqual(IDLE_MS - 50);
    expectClosedByServer(elapsed);
  });

  it("closes an idle HTTP/2 session (one call done, nothing open) within the idle timeout, with GOAWAY", async () => {
    const session = openSession(server.url);
    let goaway = false;
    session.on("goaway", () => (goaway = true));
    const closed = new Promise<number>((resolve) => session.once("close", () => resolve(performance.now())));
    const res = await rawRequest(session, "/grpc.health.v1.Health/Check", frame(new Uint8Array()), {
      headers: { "content-type": "application/grpc", te: "trailers" },
    });
    expect(res.grpcStatus).toBe(0);
    const since = performance.now();
    const elapsed = (await Promise.race([closed, sleep(GIVE_UP_MS).then(() => Infinity)])) - since;
    session.destroy();
    console.log(`idle HTTP/2 session closed after ${elapsed.toFixed(0)} ms (idle timeout ${IDLE_MS})`);
    expect(goaway).toBe(true);
    // The server starts the clock when the stream closes, a little before the client reads the end.
    expect(elapsed).toBeGreaterThanOrEqual(IDLE_MS - 200);
    expectClosedByServer(elapsed);
  });

  it("closes an HTTP/2 session that only sends PINGs (no stream) within the idle timeout", async () => {
    const session = openSession(server.url);
    const since = performance.now();
    const closed = new Promise<number>((resolve) => session.once("close", () => resolve(performance.now())));
    const pinger = setInterval(() => {
      if (!session.closed && !session.destroyed) session.ping(() => {});
    }, 100);
    const elapsed = (await Promise.race([closed, sleep(GIVE_UP_MS).then(() => Infinity)])) - since;
    clearInterval(pinger);
    session.destroy();
    console.log(`HTTP/2 session with only PINGs closed after ${elapsed.toFixed(0)} ms (idle timeout ${IDLE_MS})`);
    expectClosedByServer(elapsed);
  });

  it("sends no GOAWAY to an HTTP/2 session whose only stream (a Health.Watch) is open but quiet", async () => {
    const session = openSession(server.url);
    let goaway = false;
    session.on("goaway", () => (goaway = true));
    const stream = session.request({
      ":method": "POST",
      ":path": "/grpc.health.v1.Health/Watch",
      "content-type": "application/grpc",
      te: "trailers",
    });
    stream.on("error", () => {});
    let received = 0;
    stream.on("data", (chunk: Buffer) => (received += chunk.length));
    stream.end(frame(new Uint8Array()));
    await sleep(QUIET_MS);
    const state = {
      goaway,
      sessionClosed: session.closed || session.destroyed,
      streamClosed: stream.closed,
      received: received > 0,
    };
    stream.close();
    const closed = new Promise<number>((resolve) => session.once("close", () => resolve(performance.now())));
    const since = performance.now();
    const elapsed = (await Promise.race([closed, sleep(GIVE_UP_MS).then(() => Infinity)])) - since;
    session.destroy();
    expect(state).toEqual({ goaway: false, sessionClosed: false, streamClosed: false, received: true });
    // Once the stream is gone the session is idle, and goes.
    expectClosedByServer(elapsed);
  });

  it("keeps an open Chat bidi stream that sits idle for 3x the idle timeout: its next turn completes", async () => {
    const chat = new WireChat(agentServiceClient(server.baseUrl, "grpc"), { init: { agent: "assistant" } });
    chat.sendText("before the pause");
    expect(chunksText((await chat.nextTurn()).chunks)).toBe("echo: before the pause");
    await sleep(QUIET_MS);
    chat.sendText("after the pause");
    expect(chunksText((await chat.nextTurn()).chunks)).toBe("echo: after the pause");
    const { output } = await chat.finish();
    expect(output.sessionId).not.toBe("");
  });
});

type HealthClient = ReturnType<typeof createClient<typeof Health>>;

/** Starts Health.Watch on the whole server; records statuses and how it ended. */
function watchHealth(client: HealthClient) {
  const statuses: Serving[] = [];
  let ended: string | undefined;
  const done = (async () => {
    for await (const res of client.watch({ service: "" })) statuses.push(res.status);
    ended = "ended";
  })().catch((err: unknown) => (ended = String(err)));
  return { statuses, done, ended: () => ended };
}

describe("long server streams", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({ args: [...LIMIT_ARGS] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("does not cut a quiet Health.Watch (HTTP/2 and HTTP/1.1) open past the idle and headers timeouts", async () => {
    const h2 = watchHealth(createClient(Health, createGrpcTransport({ baseUrl: server.url })));
    const h1 = watchHealth(createClient(Health, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" })));
    await sleep(QUIET_MS);
    expect(h2.ended()).toBeUndefined();
    expect(h1.ended()).toBeUndefined();
    expect(h2.statuses).toEqual([Serving.SERVING]);
    expect(h1.statuses).toEqual([Serving.SERVING]);
    // Still connected: shutdown pushes NOT_SERVING down both streams.
    await server.stop();
    await Promise.all([h2.done, h1.done]);
    expect(h2.statuses).toEqual([Serving.SERVING, Serving.NOT_SERVING]);
    expect(h1.statuses).toEqual([Serving.SERVING, Serving.NOT_SERVING]);
  });
});

describe("--max-connections", () => {
  const MAX = 20;
  /** Long enough that the over-cap closes come first however slow the machine is. */
  const CAP_FIRST_BYTES_MS = 3_000;
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({
      args: ["--first-bytes-timeout-ms", String(CAP_FIRST_BYTES_MS), "--max-connections", String(MAX)],
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("closes connections over the cap at once, and health answers once the idle ones are gone", async () => {
    const first = await Promise.all(Array.from({ length: MAX }, () => connectRaw(server.port)));
    // Kept as a pause: no event tells a client that the server has accepted its socket, and these
    // sockets must send nothing (their first-bytes timeout is measured). 50 ms lets the accept loop run.
    await sleep(50);
    const since = performance.now();
    const firstCloses = first.map((s) => closeTime(s, since, GIVE_UP_MS));
    const extra = await Promise.all(Array.from({ length: MAX }, () => connectRaw(server.port).catch(() => undefined)));
    const extraCloses = await Promise.all(extra.map((s) => (s ? closeTime(s, since, GIVE_UP_MS) : Promise.resolve(0))));
    const idleCloses = await Promise.all(firstCloses);
    console.log(
      `over-cap connections closed after at most ${Math.max(...extraCloses).toFixed(0)} ms, ` +
        `idle ones under the cap after ${Math.min(...idleCloses).toFixed(0)}–${Math.max(...idleCloses).toFixed(0)} ms`,
    );
    // The ones over the cap were closed at once: before any accepted one reached its first-bytes
    // timeout (an order of events). The ones under the cap were accepted: open until that timeout.
    expect(Math.max(...extraCloses)).toBeLessThan(Math.min(...idleCloses));
    expect(Math.min(...idleCloses)).toBeGreaterThanOrEqual(CAP_FIRST_BYTES_MS - 150);
    idleCloses.forEach(expectClosedByServer);

    const health = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
    expect((await health.check({}, { timeoutMs: 2000 })).status).toBe(Serving.SERVING);
    const logged = server.logLines().find((l) => l.msg === "connections over --max-connections closed");
    expect(logged).toMatchObject({ maxConnections: MAX });
    expect(logged!.rejectedTotal as number).toBeGreaterThanOrEqual(1);
  });
});

describe("HTTP/1.1 request timeout (in-process: it has no flag)", () => {
  it("bounds receiving the request, not a long response: a quiet HTTP/1.1 Watch outlives it", async () => {
    const REQUEST_MS = 400;
    const server = await startServer({
      port: 0,
      logger: pino({ level: "silent" }),
      registerAgentService: () => {},
      connectionLimits: { headersTimeoutMs: 300, requestTimeoutMs: REQUEST_MS, idleTimeoutMs: 300 },
    });
    try {
      // A request whose body never arrives is cut at the request timeout (408).
      const socket = await connectRaw(server.port);
      const received = collect(socket);
      const since = performance.now();
      socket.write(
        "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n",
      );
      const elapsed = await closeTime(socket, since, GIVE_UP_MS);
      console.log(
        `HTTP/1.1 request without its body closed after ${elapsed.toFixed(0)} ms (request timeout ${REQUEST_MS})`,
      );
      expect(received()).toMatch(/^HTTP\/1\.1 408 /);
      expectClosedByServer(elapsed);

      // A complete request with a long, quiet response is not.
      const h1 = watchHealth(createClient(Health, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" })));
      await sleep(3 * REQUEST_MS);
      expect(h1.ended()).toBeUndefined();
      expect(h1.statuses).toEqual([Serving.SERVING]);
      const closing = server.close({ graceMs: 2000 });
      await h1.done;
      expect(h1.statuses).toEqual([Serving.SERVING, Serving.NOT_SERVING]);
      await closing;
    } finally {
      await server.close({ graceMs: 0 });
    }
  });
});

describe("connection limit flags", () => {
  const FLAGS = [
    "--first-bytes-timeout-ms",
    "--headers-timeout-ms",
    "--idle-timeout-ms",
    "--keepalive-interval-ms",
    "--keepalive-timeout-ms",
    "--max-connections",
    "--max-concurrent-streams",
  ];

  it("parses each flag into the serve config and documents it with its default in --help", () => {
    const command = parseCommandLine(["serve", ...FLAGS.flatMap((flag, i) => [flag, String(1000 + i)])], {});
    expect(command.kind === "serve" && command.config.connectionLimits).toEqual({
      firstBytesTimeoutMs: 1000,
      headersTimeoutMs: 1001,
      idleTimeoutMs: 1002,
      keepaliveIntervalMs: 1003,
      keepaliveTimeoutMs: 1004,
      maxConnections: 1005,
      maxConcurrentStreams: 1006,
    });
    const defaults = parseCommandLine(["serve"], {});
    expect(defaults.kind === "serve" && defaults.config.connectionLimits).toBeUndefined();
    for (const flag of FLAGS) expect(USAGE).toContain(flag);
    expect(USAGE).toContain(`(default ${DEFAULT_CONNECTION_LIMITS.idleTimeoutMs})`);
    // As docs/server.md and docs/limits.md state them: a PING every 30 s, answered within 20 s.
    expect([DEFAULT_CONNECTION_LIMITS.keepaliveIntervalMs, DEFAULT_CONNECTION_LIMITS.keepaliveTimeoutMs]).toEqual([
      30_000, 20_000,
    ]);
    expect(USAGE).toContain("(default 30000)");
    expect(USAGE).toContain("(default 20000)");
    expect(
      DEFAULT_CONNECTION_LIMITS.firstBytesTimeoutMs + DEFAULT_CONNECTION_LIMITS.headersTimeoutMs,
    ).toBeLessThanOrEqual(60_000);
  });

  it.each(
    FLAGS.flatMap((flag) => [
      [flag, "abc"],
      [flag, "-1"],
      [flag, "0"],
      [flag, "1.5"],
      [flag, "99999999999"],
    ]),
  )("rejects %s %s with a usage error", (flag, value) => {
    expect(() => parseCommandLine(["serve", flag, value], {})).toThrow(UsageError);
    expect(() => parseCommandLine(["serve", flag, value], {})).toThrow(flag);
  });
});
