// npm run fuzz — throws generated bad input at a real `agentd serve` process.
//
// Sends FUZZ_CASES (default 5,400) requests across gRPC, gRPC-Web and Connect
// (HTTP/2 prior knowledge, plus gRPC-Web and Connect over HTTP/1.1): undecodable
// protobuf (random bytes, bit flips, truncation, bad lengths, invalid UTF-8,
// bad wire types), broken framing (truncated envelopes, a compressed flag
// without an encoding, huge declared lengths, no or two messages for unary),
// bad deadlines, oversized IDs, over-nested JSON, bad JSON and wrong content
// types. Prints, per protocol and input class, how the calls ended (status
// names; HTTP statuses when no RPC status came back), then the counts of
// crashes (server exits), hangs (no answer within FUZZ_HANG_MS, default 5 s),
// INTERNAL answers and error-level log lines. Then the HTTP layer: FUZZ_HTTP_CASES
// (default 2,200) raw connections with malformed authorities, headers, methods,
// request lines, chunked framing, pipelining and random bytes (HTTP/1.x), and
// fuzzed SETTINGS, frames and header blocks (HTTP/2), each of which must be
// answered or closed (test/robustness/http-fuzz-cases.ts; a seeded slice runs
// in the test suite). Exits 1 if any of those counts is not 0, or the server
// exited. Deterministic for a given FUZZ_SEED. Not part of the test command.
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { request as http1Request } from "node:http";
import type { ClientHttp2Session } from "node:http2";
import {
  ListSnapshotsRequestSchema,
  RunRequestSchema,
  RunStreamRequestSchema,
} from "../gen/ts/agentd/v1/agent_service_pb.js";
import { startAgentd } from "../test/harness/agentd-process.js";
import { textInput } from "../test/harness/wire-chat.js";
import { BAD_PAYLOAD_CLASSES, badPayloads, nestedJson, prng } from "../test/robustness/bad-payloads.js";
import { agentPath, frame, openSession, rawRequest } from "../test/robustness/raw-rpc.js";
import { httpFuzzCases } from "../test/robustness/http-fuzz-cases.js";
import { formatHttpFuzzReport, runHttpFuzz } from "../test/robustness/http-fuzz-runner.js";
import { statusForCode } from "../src/protocol/status-codes.js";

const TOTAL = Number(process.env.FUZZ_CASES ?? 5400);
const HANG_MS = Number(process.env.FUZZ_HANG_MS ?? 5000);
const SEED = Number(process.env.FUZZ_SEED ?? 12);
const CONCURRENCY = Number(process.env.FUZZ_CONCURRENCY ?? 32);
const HTTP_CASES = Number(process.env.FUZZ_HTTP_CASES ?? 2200);

type Protocol = "grpc" | "grpc-web" | "connect" | "grpc-web-h1" | "connect-h1";
const PROTOCOLS: readonly Protocol[] = ["grpc", "grpc-web", "connect", "grpc-web-h1", "connect-h1"];

/** One request to send: method, message bytes (unframed) or a ready body, extra headers. */
interface Case {
  method: "Run" | "RunStream" | "ListSnapshots";
  /** Protobuf message bytes, framed per protocol (unary Connect sends them raw). */
  messages?: Uint8Array[];
  /** A body sent as is (already framed or deliberately broken). */
  rawBody?: Uint8Array;
  headers?: Record<string, string>;
  /** Replaces the protocol's content type. */
  contentType?: string;
}

type Generator = (rand: () => number, protocol: Protocol, i: number) => Case;

const int = (rand: () => number, n: number) => Math.floor(rand() * n);
const pick = <T>(rand: () => number, xs: readonly T[]): T => xs[int(rand, xs.length)];
const validRun = (
  text = "hi",
  init: Record<string, unknown> = { agent: "assistant" },
  metadata?: Record<string, unknown>,
) => toBinary(RunRequestSchema, create(RunRequestSchema, { init, input: textInput(text, metadata) }));
const header = (flags: number, length: number) => {
  const b = Buffer.alloc(5);
  b.writeUInt8(flags, 0);
  b.writeUInt32BE(length >>> 0, 1);
  return b;
};

const payloadPools = new Map<string, Uint8Array[]>();
function badPayload(kind: (typeof BAD_PAYLOAD_CLASSES)[number], method: "Run" | "RunStream", i: number): Uint8Array {
  const key = `${kind}/${method}`;
  let pool = payloadPools.get(key);
  if (!pool) {
    pool = badPayloads(
      kind,
      200,
      SEED * 1000 + BAD_PAYLOAD_CLASSES.indexOf(kind) * 10 + (method === "Run" ? 0 : 1),
      method === "Run" ? RunRequestSchema : RunStreamRequestSchema,
    );
    payloadPools.set(key, pool);
  }
  return pool[i % pool.length];
}

const CLASSES: Record<string, Generator> = {
  ...Object.fromEntries(
    BAD_PAYLOAD_CLASSES.map((kind): [string, Generator] => [
      kind,
      (rand, _p, i) => {
        const method = rand() < 0.5 ? "Run" : "RunStream";
        return { method, messages: [badPayload(kind, method, i)] };
      },
    ]),
  ),
  "truncated-envelope": (rand) => {
    const msg = validRun();
    const cut = int(rand, msg.length);
    return {
      method: pick(rand, ["Run", "RunStream"] as const),
      rawBody: Buffer.concat([header(0, msg.length), msg.subarray(0, cut)]),
    };
  },
  "compressed-flag-no-encoding": (rand) => ({
    method: pick(rand, ["Run", "RunStream"] as const),
    rawBody: frame(validRun(), 1),
  }),
  "bad-gzip": (rand) => ({
    method: pick(rand, ["Run", "RunStream"] as const),
    rawBody: frame(
      Uint8Array.from({ length: 8 + int(rand, 32) }, () => int(rand, 256)),
      1,
    ),
    headers: { "grpc-encoding": "gzip", "connect-content-encoding": "gzip", "content-encoding": "gzip" },
  }),
  "huge-declared-length": (rand) => ({
    method: pick(rand, ["Run", "RunStream"] as const),
    rawBody: Buffer.concat([header(0, 0x7fffffff - int(rand, 1000)), Buffer.from([1, 2, 3])]),
  }),
  "no-message": () => ({ method: "Run", rawBody: new Uint8Array(0) }),
  "two-messages": (rand) => ({ method: pick(rand, ["Run", "RunStream"] as const), messages: [validRun(), validRun()] }),
  "bad-timeout": (rand) => {
    const value = pick(rand, [
      "abc",
      "-1S",
      "1.5S",
      "999999999H",
      "99999999H",
      "600H",
      "0n",
      "1n",
      "1m",
      "",
      " ",
      "10",
      "5X",
      "1e3m",
    ]);
    return { method: "Run", messages: [validRun()], headers: { "grpc-timeout": value, "connect-timeout-ms": value } };
  },
  "long-id": (rand) => {
    const long = "x".repeat(201 + int(rand, 100_000));
    const init = pick(rand, [
      { agent: "assistant", sessionId: long },
      { agent: "assistant", snapshotId: long },
      { agent: long },
    ]);
    return { method: "Run", messages: [validRun("hi", init)] };
  },
  "long-page-token": (rand) => ({
    method: "ListSnapshots",
    messages: [
      toBinary(
        ListSnapshotsRequestSchema,
        create(ListSnapshotsRequestSchema, {
          agent: "assistant",
          sessionId: "missing",
          pageToken: "t".repeat(1 + int(rand, 100_000)),
        }),
      ),
    ],
  }),
  "deep-json": (rand) => ({
    method: "Run",
    messages: [validRun("deep", { agent: "assistant" }, nestedJson(33 + int(rand, 60)))],
  }),
  "bad-json": (rand) => ({
    method: pick(rand, ["Run", "RunStream"] as const),
    messages: [
      Buffer.from(
        pick(rand, [
          "{",
          "[]",
          "null",
          '{"init":5}',
          '{"init":{"agent":7}}',
          '{"input":{"message":{"role":"NOPE"}}}',
          "\u0000\u00ff",
          '{"init":{"sessionId":"' + "\\ud800" + '"}}',
        ]),
      ),
    ],
    contentType: "json",
  }),
  "wrong-content-type": (rand) => ({
    method: "Run",
    messages: [validRun()],
    contentType: pick(rand, [
      "text/plain",
      "application/xml",
      "application/grpc+thrift",
      "multipart/form-data",
      "application/grpc-web-text",
    ]),
  }),
};

function contentTypeFor(protocol: Protocol, method: string, json: boolean): string {
  const unary = method !== "RunStream";
  switch (protocol) {
    case "grpc":
      return json ? "application/grpc+json" : "application/grpc";
    case "grpc-web":
    case "grpc-web-h1":
      return json ? "application/grpc-web+json" : "application/grpc-web+proto";
    case "connect":
    case "connect-h1":
      return unary
        ? json
          ? "application/json"
          : "application/proto"
        : json
          ? "application/connect+json"
          : "application/connect+proto";
  }
}

function bodyFor(protocol: Protocol, c: Case): Uint8Array {
  if (c.rawBody) {
    // Unary Connect has no envelopes: send the bytes after the 5-byte header, if any.
    if (
      (protocol === "connect" || protocol === "connect-h1") &&
      c.method !== "RunStream" &&
      c.contentType !== "json" &&
      c.rawBody.length >= 5 &&
      c.messages === undefined
    ) {
      return c.rawBody.subarray(5);
    }
    return c.rawBody;
  }
  const messages = c.messages ?? [];
  if ((protocol === "connect" || protocol === "connect-h1") && c.method !== "RunStream") return Buffer.concat(messages);
  return Buffer.concat(messages.map((m) => frame(m)));
}

/** How one call ended: a status name, "HTTP <n>" when no RPC status came back, "hang" or "reset". */
type Outcome = string;

const CONNECT_CODES: Record<string, string> = Object.fromEntries(
  Object.entries(Code)
    .filter(([, v]) => typeof v === "number")
    .map(([name]) => [name.replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase()), name]),
);
/** The gRPC status name of a numeric code (OK for 0). */
const statusName = (n: number): string => (n === 0 ? "OK" : n in Code ? statusForCode(n as Code) : `status ${n}`);
const connectName = (code: string) => {
  const camel = CONNECT_CODES[code];
  return camel ? statusName(Code[camel as keyof typeof Code] as number) : code.toUpperCase();
};

/** Reads gRPC-Web trailers (a frame with flag 0x80) or Connect end-stream JSON (flag 0x02) from a body. */
function statusFromFrames(body: Buffer, protocol: Protocol): Outcome | undefined {
  let at = 0;
  while (at + 5 <= body.length) {
    const flags = body[at];
    const length = body.readUInt32BE(at + 1);
    const data = body.subarray(at + 5, at + 5 + length);
    at += 5 + length;
    if ((protocol === "grpc-web" || protocol === "grpc-web-h1") && flags & 0x80) {
      const m = /grpc-status:\s*(\d+)/i.exec(data.toString());
      if (m) return statusName(Number(m[1]));
    }
    if ((protocol === "connect" || protocol === "connect-h1") && flags & 0x02) {
      try {
        const end = JSON.parse(data.toString()) as { error?: { code?: string } };
        return end.error?.code ? connectName(end.error.code) : "OK";
      } catch {
        return "bad end-stream";
      }
    }
  }
  return undefined;
}

interface Answer {
  httpStatus: number;
  headers: Record<string, unknown>;
  trailers: Record<string, unknown>;
  body: Buffer;
  hung?: boolean;
  error?: string;
}

function outcomeOf(protocol: Protocol, method: string, a: Answer): Outcome {
  if (a.hung) return "hang";
  const grpcStatus = a.trailers["grpc-status"] ?? a.headers["grpc-status"];
  if (grpcStatus !== undefined) return statusName(Number(grpcStatus));
  if (a.error && a.httpStatus === 0) return "reset";
  const connectUnary = (protocol === "connect" || protocol === "connect-h1") && method !== "RunStream";
  const framed = connectUnary ? undefined : statusFromFrames(a.body, protocol);
  if (framed) return framed;
  if (connectUnary) {
    if (a.httpStatus === 200) return "OK";
    try {
      const err = JSON.parse(a.body.toString()) as { code?: string };
      if (err.code) return connectName(err.code);
    } catch {
      // not a Connect error body
    }
  }
  return a.error ? "reset" : `HTTP ${a.httpStatus}`;
}

function http1Call(url: string, path: string, body: Uint8Array, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (a: Answer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(a);
    };
    const req = http1Request(
      `${url}${path}`,
      { method: "POST", headers: { ...headers, "content-length": String(body.byteLength) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          finish({
            httpStatus: res.statusCode ?? 0,
            headers: res.headers,
            trailers: res.trailers,
            body: Buffer.concat(chunks),
          }),
        );
        res.on("error", (e) =>
          finish({
            httpStatus: res.statusCode ?? 0,
            headers: res.headers,
            trailers: {},
            body: Buffer.concat(chunks),
            error: e.message,
          }),
        );
      },
    );
    const timer = setTimeout(() => {
      finish({ httpStatus: 0, headers: {}, trailers: {}, body: Buffer.alloc(0), hung: true });
      req.destroy();
    }, HANG_MS);
    req.on("error", (e) =>
      finish({ httpStatus: 0, headers: {}, trailers: {}, body: Buffer.alloc(0), error: e.message }),
    );
    req.end(body);
  });
}

async function main(): Promise<void> {
  const server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
  let exited = false;
  server.proc.once("exit", () => {
    exited = true;
  });
  let session: ClientHttp2Session = openSession(server.url);
  const rand = prng(SEED);
  const classNames = Object.keys(CLASSES);
  const cases: { protocol: Protocol; cls: string; c: Case }[] = [];
  for (let i = 0; i < TOTAL; i++) {
    const protocol = PROTOCOLS[i % PROTOCOLS.length];
    const cls = classNames[Math.floor(i / PROTOCOLS.length) % classNames.length];
    cases.push({ protocol, cls, c: CLASSES[cls](rand, protocol, i) });
  }

  const table = new Map<string, Map<Outcome, number>>();
  let hangs = 0;
  let internal = 0;
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < cases.length && !exited) {
        const { protocol, cls, c } = cases[next++];
        const json = c.contentType === "json";
        const contentType = c.contentType && !json ? c.contentType : contentTypeFor(protocol, c.method, json);
        const headers: Record<string, string> = { "content-type": contentType, ...c.headers };
        if (protocol === "grpc") headers.te = "trailers";
        if (protocol.startsWith("connect")) headers["connect-protocol-version"] = "1";
        const body = bodyFor(protocol, c);
        let answer: Answer;
        if (protocol.endsWith("-h1")) {
          answer = await http1Call(server.url, agentPath(c.method), body, headers);
        } else {
          if (session.closed || session.destroyed) session = openSession(server.url);
          answer = await rawRequest(session, agentPath(c.method), body, { headers, timeoutMs: HANG_MS });
        }
        const outcome = outcomeOf(protocol, c.method, answer);
        if (outcome === "hang") hangs++;
        if (outcome === "INTERNAL") internal++;
        const key = `${protocol.padEnd(12)} ${cls}`;
        const row = table.get(key) ?? new Map<Outcome, number>();
        row.set(outcome, (row.get(outcome) ?? 0) + 1);
        table.set(key, row);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  session.close();
  const httpStarted = performance.now();
  const http = await runHttpFuzz({
    port: server.port,
    cases: httpFuzzCases(SEED, HTTP_CASES),
    concurrency: CONCURRENCY,
    timeoutMs: HANG_MS,
    alive: () => !exited,
  });
  const httpSeconds = (performance.now() - httpStarted) / 1000;
  await new Promise((r) => setTimeout(r, 300));
  const errorLines = server.logLines().filter((l) => Number(l.level) >= 50);
  const crashed = exited ? 1 : 0;
  const sent = [...table.values()].reduce((n, row) => n + [...row.values()].reduce((a, b) => a + b, 0), 0);

  // Rows: protocol × class; one column per outcome seen.
  const outcomes = [...new Set([...table.values()].flatMap((row) => [...row.keys()]))].sort();
  const width = Math.max(...[...table.keys()].map((k) => k.length), 10);
  const cell = (s: string | number) => String(s).padStart(Math.max(String(s).length, 6));
  const columns = outcomes.map((o) => Math.max(o.length, 5));
  console.log(`agentd fuzz: ${sent} bad inputs, ${seconds.toFixed(1)} s, seed ${SEED}, hang timeout ${HANG_MS} ms\n`);
  console.log(
    `${"protocol / input class".padEnd(width)}  ${outcomes.map((o, i) => o.padStart(columns[i])).join("  ")}`,
  );
  const byClass = [...table.keys()].sort((a, b) => a.slice(13).localeCompare(b.slice(13)) || a.localeCompare(b));
  for (const key of byClass) {
    const row = table.get(key)!;
    console.log(
      `${key.padEnd(width)}  ${outcomes.map((o, i) => String(row.get(o) ?? "").padStart(columns[i])).join("  ")}`,
    );
  }
  const totals = outcomes.map((o) => [...table.values()].reduce((n, row) => n + (row.get(o) ?? 0), 0));
  console.log(`${"total".padEnd(width)}  ${totals.map((t, i) => String(t).padStart(columns[i])).join("  ")}`);
  console.log(`\nHTTP layer: ${http.sent} raw connections, ${httpSeconds.toFixed(1)} s\n`);
  console.log(formatHttpFuzzReport(http));
  console.log(`\ncrashes (server exits): ${cell(crashed)}`);
  console.log(`hangs (> ${HANG_MS} ms):    ${cell(hangs + http.hangs)}`);
  console.log(`INTERNAL answers:       ${cell(internal)}`);
  console.log(`error-level log lines:  ${cell(errorLines.length)}`);
  for (const line of errorLines.slice(0, 5)) console.log(`  ${JSON.stringify(line).slice(0, 300)}`);
  const code = await server.stop();
  if (code !== 0 && !exited) console.log(`server exit code on SIGTERM: ${code}`);
  process.exitCode = crashed || hangs || http.hangs || internal || errorLines.length ? 1 : 0;
}

await main();
