import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { create, fromJson, toBinary, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ClientHttp2Session } from "node:http2";
import {
  AgentService,
  GetSnapshotRequestSchema,
  ListSnapshotsRequestSchema,
  RunRequestSchema,
  RunStreamRequestSchema,
} from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { badPayloads, nestedJson, BAD_PAYLOAD_CLASSES } from "./bad-payloads.js";
import { agentPath, frame, grpcCall, openSession, rawRequest } from "./raw-rpc.js";

let server: AgentdProcess;
let session: ClientHttp2Session;
let client: ReturnType<typeof agentServiceClient>;
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
  session = openSession(server.url);
  client = agentServiceClient(server.baseUrl, "grpc");
});
afterAll(async () => {
  session?.close();
  // Whatever the bad clients did, the server still serves.
  expect(
    (await client.run({ init: { agent: "assistant" }, input: textInput("still alive") })).output?.finishReason,
  ).toBe(FinishReason.STOP);
  await server?.stop();
});

/** Log records written since `from` (an index into logLines()). */
const linesSince = (from: number) => server.logLines().slice(from);
const errorLines = (lines: Record<string, unknown>[]) => lines.filter((l) => Number(l.level) >= 50);
const rpcLines = (lines: Record<string, unknown>[], procedure: string) =>
  lines.filter(
    (l) =>
      l.procedure === `/agentd.v1.AgentService/${procedure}` &&
      (l.msg === "rpc" || l.msg === "rpc rejected before its handler"),
  );

/** Waits until `predicate` holds for the log (call lines are written when the response closes). */
async function waitForLog(predicate: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  while (!predicate() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
}

const runRequest = (
  text: string,
  metadata?: Record<string, unknown>,
  init: Record<string, unknown> = { agent: "assistant" },
) => toBinary(RunRequestSchema, create(RunRequestSchema, { init, input: textInput(text, metadata) }));

/** Runs `tasks` with at most `limit` in flight. */
async function pool<T>(tasks: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await tasks[i]();
      }
    }),
  );
  return results;
}

describe("undecodable requests", () => {
  it("200 random / mutated protobuf payloads over gRPC are all INVALID_ARGUMENT, with no error-level log line", async () => {
    const from = server.logLines().length;
    const payloads = BAD_PAYLOAD_CLASSES.flatMap((kind, i) =>
      badPayloads(kind, kind === "random-bytes" || kind === "bit-flip" ? 50 : 25, 1000 + i),
    );
    expect(payloads.length).toBe(200);
    const responses = await pool(
      payloads.map((p) => () => grpcCall(session, "Run", frame(p), { timeoutMs: 5000 })),
      16,
    );
    const statuses = responses.map((r) => r.grpcStatus);
    expect(statuses.filter((s) => s !== Code.InvalidArgument)).toEqual([]);
    expect(responses.every((r) => r.grpcMessage?.startsWith("the request message could not be decoded"))).toBe(true);
    await waitForLog(() => rpcLines(linesSince(from), "Run").length >= 200);
    const lines = linesSince(from);
    expect(errorLines(lines)).toEqual([]);
    expect(rpcLines(lines, "Run").map((l) => l.code)).toEqual(new Array(200).fill("INVALID_ARGUMENT"));
  });

  it("the same payloads on a server-streaming method are INVALID_ARGUMENT too", async () => {
    const from = server.logLines().length;
    const payloads = BAD_PAYLOAD_CLASSES.flatMap((kind, i) => badPayloads(kind, 3, 2000 + i, RunStreamRequestSchema));
    const responses = await pool(
      payloads.map((p) => () => grpcCall(session, "RunStream", frame(p))),
      8,
    );
    expect(responses.map((r) => r.grpcStatus).filter((s) => s !== Code.InvalidArgument)).toEqual([]);
    await waitForLog(() => rpcLines(linesSince(from), "RunStream").length >= payloads.length);
    expect(errorLines(linesSince(from))).toEqual([]);
  });

  it("invalid UTF-8 in a string field is INVALID_ARGUMENT", async () => {
    const from = server.logLines().length;
    const valid = runRequest("caf\u00e9 ok");
    const bytes = Buffer.from(valid);
    const at = bytes.indexOf(Buffer.from("\u00e9", "utf8"));
    bytes[at] = 0xff; // a lone 0xff is never UTF-8
    const r = await grpcCall(session, "Run", frame(bytes));
    expect(r.grpcStatus).toBe(Code.InvalidArgument);
    expect(r.grpcMessage).toMatch(/utf-8/i);
    await waitForLog(() => rpcLines(linesSince(from), "Run").length >= 1);
    expect(errorLines(linesSince(from))).toEqual([]);
  });

  it("garbage sent as application/proto over Connect unary is HTTP 400 invalid_argument", async () => {
    const from = server.logLines().length;
    const r = await rawRequest(session, agentPath("Run"), Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3]), {
      headers: { "content-type": "application/proto", "connect-protocol-version": "1" },
    });
    expect(r.httpStatus).toBe(400);
    expect(JSON.parse(r.body.toString()).code).toBe("invalid_argument");
    await waitForLog(() => rpcLines(linesSince(from), "Run").length >= 1);
    expect(rpcLines(linesSince(from), "Run")[0]).toMatchObject({ code: "INVALID_ARGUMENT", level: 30 });
    expect(errorLines(linesSince(from))).toEqual([]);
  });
});

describe("deadlines", () => {
  // The echo model waits echoDelayMs before each word chunk: ~8 chunks × 100 ms.
  const slow = () => frame(runRequest("one two three four five six seven", { echoDelayMs: 100 }));

  it("grpc-timeout 1m on a longer call is DEADLINE_EXCEEDED (and logged so)", async () => {
    const from = server.logLines().length;
    const r = await grpcCall(session, "Run", slow(), { headers: { "grpc-timeout": "1m" } });
    expect(r.grpcStatus).toBe(Code.DeadlineExceeded);
    await waitForLog(() => rpcLines(linesSince(from), "Run").length >= 1);
    expect(rpcLines(linesSince(from), "Run")[0]?.code).toBe("DEADLINE_EXCEEDED");
  });

  it("grpc-timeout 0n is DEADLINE_EXCEEDED", async () => {
    const r = await grpcCall(session, "Run", slow(), { headers: { "grpc-timeout": "0n" } });
    expect(r.grpcStatus).toBe(Code.DeadlineExceeded);
  });

  it("grpc-timeout 200m passing mid-call is DEADLINE_EXCEEDED", async () => {
    const r = await grpcCall(session, "Run", slow(), { headers: { "grpc-timeout": "200m" } });
    expect(r.grpcStatus).toBe(Code.DeadlineExceeded);
  });

  it("grpc-timeout 600H (beyond a Node timer) is honoured as no practical deadline: the call succeeds", async () => {
    const r = await grpcCall(session, "Run", frame(runRequest("one two three", { echoDelayMs: 30 })), {
      headers: { "grpc-timeout": "600H" },
    });
    expect(r.grpcStatus).toBe(0);
  });

  it("connect-timeout-ms beyond a Node timer also succeeds", async () => {
    const r = await rawRequest(session, agentPath("Run"), runRequest("one two three", { echoDelayMs: 30 }), {
      headers: {
        "content-type": "application/proto",
        "connect-protocol-version": "1",
        "connect-timeout-ms": "9999999999",
      },
    });
    expect(r.httpStatus).toBe(200);
  });
});

describe("clients that go away", () => {
  const long = Array.from({ length: 3000 }, (_, i) => `w${i}`).join(" ");
  // 50 ms between streamed words: the server is always still writing when the client cancels on the first bytes.
  const streamRequest = () =>
    frame(
      toBinary(
        RunStreamRequestSchema,
        create(RunStreamRequestSchema, { init: { agent: "assistant" }, input: textInput(long, { echoDelayMs: 50 }) }),
      ),
    );

  it("a client cancelling mid-stream is logged CANCELLED, not INTERNAL", async () => {
    const from = server.logLines().length;
    // Cancel (RST_STREAM CANCEL) on the first response bytes, while the server is still writing.
    await grpcCall(session, "RunStream", streamRequest(), { onData: (_chunk, cancel) => cancel() });
    // Drop the whole connection mid-stream.
    const doomed = openSession(server.url);
    await grpcCall(doomed, "RunStream", streamRequest(), { onData: () => doomed.destroy() });
    await waitForLog(() => rpcLines(linesSince(from), "RunStream").length >= 2);
    const lines = rpcLines(linesSince(from), "RunStream");
    expect(lines.map((l) => l.code)).toEqual(["CANCELLED", "CANCELLED"]);
    expect(errorLines(linesSince(from))).toEqual([]);
    expect(server.logs()).not.toContain("handler for rpc");
  });
});

describe("oversized and overly nested input", () => {
  it("a 100k-character session_id is INVALID_ARGUMENT with a short message (trailers under 1 KB)", async () => {
    const r = await grpcCall(
      session,
      "Run",
      frame(runRequest("x", undefined, { agent: "assistant", sessionId: "s".repeat(100_000) })),
    );
    expect(r.grpcStatus).toBe(Code.InvalidArgument);
    expect(r.grpcMessage).toContain("session_id");
    expect(r.trailerBytes).toBeLessThan(1024);
  });

  it("a 100k-character snapshot_id in GetSnapshot is INVALID_ARGUMENT with a short message", async () => {
    const req = toBinary(
      GetSnapshotRequestSchema,
      create(GetSnapshotRequestSchema, { agent: "assistant", snapshotId: "p".repeat(100_000) }),
    );
    const r = await grpcCall(session, "GetSnapshot", frame(req));
    expect(r.grpcStatus).toBe(Code.InvalidArgument);
    expect(r.trailerBytes).toBeLessThan(1024);
  });

  it("an ID or agent name holding a NUL character is INVALID_ARGUMENT naming the field (whatever the store)", async () => {
    const calls: Array<[string, () => Promise<unknown>]> = [
      ["session_id", () => client.getSession({ sessionId: "s\u0000" })],
      ["session_id", () => client.deleteSession({ sessionId: "s\u0000" })],
      ["snapshot_id", () => client.getSnapshot({ agent: "assistant", snapshotId: "p\u0000" })],
      [
        "init.session_id",
        () => client.run({ init: { agent: "assistant", sessionId: "s\u0000" }, input: textInput("x") }),
      ],
      ["init.agent", () => client.run({ init: { agent: "assistant\u0000" }, input: textInput("x") })],
    ];
    for (const [field, call] of calls) {
      const err = await call().then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code, field).toBe(Code.InvalidArgument);
      expect(err?.rawMessage).toBe(`${field} contains the character U+0000 (NUL), which no ID or agent name holds`);
    }
  });

  it("long input echoed in other errors is cut to a prefix and its length", async () => {
    // A 150-character (allowed) session ID that does not exist: NOT_FOUND, message intact.
    const id = "n".repeat(150);
    const r = await grpcCall(session, "Run", frame(runRequest("x", undefined, { agent: "assistant", sessionId: id })));
    expect(r.grpcStatus).toBe(Code.NotFound);
    expect(r.grpcMessage).toContain(id);
    // A 100k-character page token (no length limit of its own) is echoed as a prefix plus its length.
    const { output } = await client.run({ init: { agent: "assistant" }, input: textInput("for listing") });
    const req = toBinary(
      ListSnapshotsRequestSchema,
      create(ListSnapshotsRequestSchema, {
        agent: "assistant",
        sessionId: output!.sessionId,
        pageToken: "t".repeat(100_000),
      }),
    );
    const listed = await grpcCall(session, "ListSnapshots", frame(req));
    expect(listed.grpcStatus).toBe(Code.InvalidArgument);
    expect(listed.grpcMessage).toContain(`${"t".repeat(200)}…(100000 chars)`);
    expect(listed.trailerBytes).toBeLessThan(1024);
  });

  it("metadata nested 64 levels deep is INVALID_ARGUMENT naming the field (Connect JSON); 32 levels are fine", async () => {
    // Connect with JSON: the protobuf decoder's own recursion limit does not apply, ours does.
    const json = createClient(
      AgentService,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat: false }),
    );
    const deep = await json.run({ init: { agent: "assistant" }, input: textInput("deep", nestedJson(64)) }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(deep?.code).toBe(Code.InvalidArgument);
    expect(deep?.rawMessage).toContain("input.message.metadata");
    expect(deep?.rawMessage).toContain("32 levels");
    const ok = await json.run({ init: { agent: "assistant" }, input: textInput("ok", nestedJson(32)) });
    expect(ok.output?.finishReason).toBe(FinishReason.STOP);
    // What was stored reads back, over JSON and binary.
    for (const reader of [json, client]) {
      const snapshot = await reader.getSnapshot({ agent: "assistant", snapshotId: ok.output!.snapshotId });
      expect(snapshot.snapshot?.snapshotId).toBe(ok.output!.snapshotId);
    }
  });

  it("nesting past the limit is INVALID_ARGUMENT over binary gRPC too (33 and 64 levels)", async () => {
    for (const depth of [33, 40, 64]) {
      const err = await client.run({ init: { agent: "assistant" }, input: textInput("deep", nestedJson(depth)) }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code, `depth ${depth}`).toBe(Code.InvalidArgument);
    }
  });

  it("a deeply nested tool output (google.protobuf.Value) is INVALID_ARGUMENT naming the field", async () => {
    const output = fromJson(ValueSchema, nestedJson(40) as JsonValue);
    const input = {
      message: { content: [{ kind: { case: "toolResponse" as const, value: { name: "t", ref: "r", output } } }] },
    };
    const err = await client.run({ init: { agent: "assistant" }, input }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.rawMessage).toContain("input.message.content[0].tool_response.output");
  });
});
