import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentInput } from "../../gen/ts/agentd/v1/agent_pb.js";
import { AgentService as AgentServiceDesc, type AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { textInput, WireChat } from "../harness/wire-chat.js";

// Issue 48 items 1 and 5: one tenant's inputs (an amplifying state patch, a
// deep or prototype-naming patch, a steer flood) are refused with a named
// limit while the server lives and another tenant's calls stay fast; a failed
// patch's error and the server's log never carry conversation content.
// Tenant acme attacks, tenant globex measures.

const ACME = "acme-token-0123456789abcdef012345";
const GLOBEX = "globex-token-0123456789abcdef0123";
/**
 * The bound asserted on globex's p99 latency while acme attacks. The issue's
 * target is 250 ms on an idle machine; the bound is generous because the
 * test machines are shared (unbounded, the attacks froze the server for
 * tens of seconds or killed it).
 */
const P99_BOUND_MS = 1000;

type Op = { op: string; path: string; value?: unknown; from?: string };

function ops(list: Op[]): { op: string; path: string; from: string; value?: ReturnType<typeof wireValue> }[] {
  return list.map((o) => ({
    op: o.op,
    path: o.path,
    from: o.from ?? "",
    ...(o.value !== undefined ? { value: wireValue(o.value) } : {}),
  }));
}

function wireValue(value: unknown): ReturnType<typeof fromJson<typeof ValueSchema>> {
  return fromJson(ValueSchema, value as JsonValue);
}

function p99(latencies: number[]): number {
  const sorted = [...latencies].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(sorted.length * 0.99) - 1)]!;
}

let server: AgentdProcess;
let acme: Client<typeof AgentService>;
let globex: Client<typeof AgentService>;

beforeAll(async () => {
  server = await startAgentd({
    args: [
      "test/fixtures/agents.ts",
      "test/fixtures/hostile-agents.ts",
      "--auth-tokens",
      writeTokensFile([`${ACME} acme`, `${GLOBEX} globex`]),
    ],
  });
  acme = clientWithToken(server.baseUrl, ACME);
  globex = clientWithToken(server.baseUrl, GLOBEX);
  for (let i = 0; i < 5; i++) await globexCall(); // warm up: the first calls compile code paths
});
afterAll(async () => {
  await server?.stop();
});

/** A "ledger-notes" session of `client` with one turn per text; its ID and each turn's snapshot ID. */
async function notesSession(
  client: Client<typeof AgentService>,
  texts: string[],
): Promise<{ sessionId: string; snapshots: string[] }> {
  const chat = new WireChat(client, { init: { agent: "ledger-notes" } });
  const snapshots: string[] = [];
  for (const text of texts) {
    chat.sendText(text);
    snapshots.push((await chat.nextTurn()).turnEnd.snapshotId);
  }
  const { output } = await chat.finish();
  return { sessionId: output.sessionId, snapshots };
}

/** One globex call: a Run on a fresh ledger-notes session. */
async function globexCall(): Promise<void> {
  const { output } = await globex.run({ init: { agent: "ledger-notes" }, input: textInput("ping") });
  expect(output?.finishReason).toBe(FinishReason.STOP);
}

/**
 * Runs globex's calls one after another while `attack` runs (and at least
 * `min` of them); resolves with the attack's outcome and each call's latency.
 */
async function measureDuring<T>(attack: Promise<T>, min = 20): Promise<{ result: T; latencies: number[] }> {
  let done = false;
  const result = attack.finally(() => (done = true));
  const latencies: number[] = [];
  while (!done || latencies.length < min) {
    const started = performance.now();
    await globexCall();
    latencies.push(performance.now() - started);
  }
  return { result: await result, latencies };
}

async function serving(): Promise<boolean> {
  const health = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
  const { status } = await health.check({ service: "" });
  return status === HealthCheckResponse_ServingStatus.SERVING;
}

describe("state_patch bounds", () => {
  it("refuses 30 doubling copies (copy /notes -> /notes/-) with RESOURCE_EXHAUSTED naming --max-patch-bytes, five times over, while globex's p99 stays bounded", async () => {
    const { sessionId, snapshots } = await notesSession(acme, ["a"]);
    const doubling = ops(Array.from({ length: 30 }, () => ({ op: "copy", from: "/notes", path: "/notes/-" })));
    const attack = (async () => {
      const errors: ConnectError[] = [];
      for (let i = 0; i < 5; i++) {
        errors.push(
          await acme
            .run({
              init: { agent: "ledger-notes", snapshotId: snapshots[0], statePatch: doubling },
              input: textInput("b"),
            })
            .then(
              () => new ConnectError("the doubling patch was accepted", Code.Unknown),
              (err: unknown) => ConnectError.from(err),
            ),
        );
      }
      return errors;
    })();
    const { result, latencies } = await measureDuring(attack);
    for (const err of result) {
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(err.rawMessage).toMatch(/init\.state_patch\[\d+\] \(copy "\/notes\/-"\).*--max-patch-bytes/);
    }
    console.log(`globex p99 during 5 doubling patches: ${p99(latencies).toFixed(1)} ms over ${latencies.length} Runs`);
    expect(p99(latencies)).toBeLessThan(P99_BOUND_MS);
    expect(await serving()).toBe(true);
    // Nothing was committed: the session still has its one snapshot, readable.
    const page = await acme.listSnapshots({ agent: "ledger-notes", sessionId });
    expect(page.snapshots).toHaveLength(1);
    await expect(acme.getSnapshot({ agent: "ledger-notes", sessionId })).resolves.toBeDefined();
  });

  it("refuses a patch with more operations than --max-patch-operations before applying any", async () => {
    const { snapshots } = await notesSession(acme, ["a"]);
    const err = await acme
      .run({
        init: {
          agent: "ledger-notes",
          snapshotId: snapshots[0],
          statePatch: ops(Array.from({ length: 1001 }, () => ({ op: "test", path: "/count", value: 1 }))),
        },
        input: textInput("b"),
      })
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((err as ConnectError).rawMessage).toMatch(/1001 operations; the limit is 1000 \(--max-patch-operations\)/);
  });

  it("refuses a copy from /constructor (a function on any object) and a path through __proto__; nothing commits", async () => {
    const { sessionId, snapshots } = await notesSession(acme, ["a"]);
    for (const [patch, message] of [
      [[{ op: "copy", from: "/constructor", path: "/notes/-" }], /"from" names a path that does not exist/],
      [[{ op: "copy", from: "/notes/constructor", path: "/notes/-" }], /"from" names a path that does not exist/],
      [[{ op: "add", path: "/__proto__/polluted", value: "yes" }], /"__proto__"/],
      [[{ op: "replace", path: "/notes/toString", value: "x" }], /invalid array index/],
    ] as [Op[], RegExp][]) {
      const err = await acme
        .run({
          init: { agent: "ledger-notes", snapshotId: snapshots[0], statePatch: ops(patch) },
          input: textInput("b"),
        })
        .catch((e: unknown) => ConnectError.from(e));
      expect((err as ConnectError).code, JSON.stringify(patch)).toBe(Code.InvalidArgument);
      expect((err as ConnectError).rawMessage).toMatch(message);
    }
    const page = await acme.listSnapshots({ agent: "ledger-notes", sessionId });
    expect(page.snapshots).toHaveLength(1);
  });

  it("refuses a patch that nests the state past 32 levels (add [] at /d, /d/0, /d/0/0, ... 40 times) with INVALID_ARGUMENT; the session stays readable", async () => {
    const { sessionId, snapshots } = await notesSession(acme, ["a"]);
    const nesting = ops(Array.from({ length: 40 }, (_, i) => ({ op: "add", path: `/d${"/0".repeat(i)}`, value: [] })));
    const err = await acme
      .run({ init: { agent: "ledger-notes", snapshotId: snapshots[0], statePatch: nesting }, input: textInput("b") })
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/nested more than 32 levels deep/);
    const page = await acme.listSnapshots({ agent: "ledger-notes", sessionId, includeState: true });
    expect(page.snapshots).toHaveLength(1);
    const { snapshot } = await acme.getSnapshot({ agent: "ledger-notes", sessionId });
    expect(snapshot?.snapshotId).toBe(snapshots[0]);
  });
});

describe("a failed patch's error and the log carry no conversation content", () => {
  const SECRET = "S3CR3T-7f3a"; // short: protobuf-es quotes short values in its decode errors

  it("keeps the history and state out of the error of every failing state or messages patch, and out of the log", async () => {
    const { snapshots } = await notesSession(acme, [SECRET, `${SECRET} second`]);
    const failing: { statePatch?: Op[]; messagesPatch?: Op[] }[] = [
      { statePatch: [{ op: "add", path: "/missing/deep", value: 1 }] },
      { statePatch: [{ op: "test", path: "/notes/0", value: "guess" }] },
      { statePatch: [{ op: "copy", path: "/notes/-" }] },
      { statePatch: [{ op: "replace", path: "/notes/0", value: 7 }] }, // fails the state schema
      { messagesPatch: [{ op: "add", path: "/0/nothere/x", value: 1 }] },
      { messagesPatch: [{ op: "move", from: "/0/content/0/text", path: "/0/role" }] }, // the text becomes the role
      { messagesPatch: [{ op: "copy", from: "/0/content/0/text", path: "/1/content/0/data" }] },
      { messagesPatch: [{ op: "remove", path: "/0/content/0" }] }, // a message without parts
    ];
    for (const edit of failing) {
      const err = await acme
        .run({
          init: {
            agent: "ledger-notes",
            snapshotId: snapshots[1],
            ...(edit.statePatch ? { statePatch: ops(edit.statePatch) } : {}),
            ...(edit.messagesPatch ? { messagesPatch: ops(edit.messagesPatch) } : {}),
          },
          input: textInput("b"),
        })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(err, JSON.stringify(edit)).toBeDefined();
      expect(err!.code, JSON.stringify(edit)).toBe(Code.InvalidArgument);
      expect(err!.rawMessage, JSON.stringify(edit)).toMatch(/init\.(state|messages)_patch/);
      expect(err!.rawMessage, JSON.stringify(edit)).not.toContain(SECRET);
      expect(JSON.stringify(err!.details), JSON.stringify(edit)).not.toContain(SECRET);
    }
    // Every refused call is logged; info lines go out in batches, in order, so once the four
    // messages_patch refusals (the last four calls) are in the log, all are. None quotes the history.
    await server.logLinesMatching((line) => /^init\.messages_patch/.test(String(line.error ?? "")), 4);
    expect(server.logs()).not.toContain(SECRET);
  });
});

describe("steer bounds", () => {
  const steer = (text: string, requestId: string): AgentInput =>
    ({ ...textInput(text), steer: true, requestId }) as AgentInput;

  /** Sends steers built by `make` on a running slow turn until the Chat fails; the error and how many were sent. */
  async function flood(
    make: (i: number) => AgentInput,
    max: number,
    pauseMs = 0,
  ): Promise<{ err: ConnectError; sent: number }> {
    const chat = new WireChat(acme, { init: { agent: "long-turn" }, input: textInput("long turn") as AgentInput });
    await chat.nextChunk(); // the turn runs (for 30 s): steers wait for it
    const ended = chat.drain().then(
      () => new ConnectError("the flood was accepted", Code.Unknown),
      (e: unknown) => ConnectError.from(e),
    );
    let sent = 0;
    let over = false;
    void ended.then(() => (over = true));
    while (!over && sent < max) {
      chat.send({ input: make(sent) });
      sent++;
      // A pause lets a big steer be written whole before the next (a refusal then reaches the client as a status).
      await new Promise((resolve) => (pauseMs > 0 ? setTimeout(resolve, pauseMs) : setImmediate(resolve)));
    }
    return { err: await ended, sent };
  }

  it("refuses a flood of 1,400 small steers on one turn at 16 (the per-turn limit) with RESOURCE_EXHAUSTED", async () => {
    const { result, latencies } = await measureDuring(flood((i) => steer(`steer ${i}`, `s-${i}`), 1400));
    expect(result.err.code).toBe(Code.ResourceExhausted);
    expect(result.err.rawMessage).toMatch(/already accepted 16 steers \(the limit per turn is 16\)/);
    console.log(`globex p99 during a flood of small steers: ${p99(latencies).toFixed(1)} ms`);
    expect(p99(latencies)).toBeLessThan(P99_BOUND_MS);
    expect(await serving()).toBe(true);
  });

  it("refuses 3.9 MiB steers once 16 MiB wait (--max-waiting-input-bytes: the 5th; 12 sent at most, the flood scaled to the bound), while globex's p99 stays bounded", async () => {
    const big = "x".repeat(Math.floor(3.9 * 1024 * 1024));
    const { result, latencies } = await measureDuring(flood((i) => steer(`${i}${big}`, `big-${i}`), 12, 100));
    expect(result.err.code).toBe(Code.ResourceExhausted);
    expect(result.err.rawMessage).toMatch(/--max-waiting-input-bytes/);
    console.log(`globex p99 during a flood of 3.9 MiB steers: ${p99(latencies).toFixed(1)} ms`);
    expect(p99(latencies)).toBeLessThan(P99_BOUND_MS);
    expect(await serving()).toBe(true);
  });

  it("refuses steers sent through SendInvocationInput to detached work past 16 MiB waiting, the work going on", async () => {
    const chat = new WireChat(acme, {
      init: { agent: "long-turn" },
      input: textInput("long detached") as AgentInput,
    });
    await chat.nextChunk();
    chat.send({ input: { detach: true } as AgentInput });
    const { output } = await chat.drain();
    const big = "y".repeat(1024 * 1024);
    // In batches of 3 (one HTTP/2 connection buffers only so much at once): all arrive while the turn runs (30 s).
    const outcomes: (ConnectError | undefined)[] = [];
    for (let batch = 0; batch < 8; batch++) {
      outcomes.push(
        ...(await Promise.all(
          [0, 1, 2].map((j) =>
            acme
              .sendInvocationInput({
                agent: "long-turn",
                snapshotId: output.snapshotId,
                input: steer(`${batch}-${j}${big}`, `d-${batch}-${j}`),
              })
              .then(
                () => undefined,
                (e: unknown) => ConnectError.from(e),
              ),
          ),
        )),
      );
    }
    const refused = outcomes.find((o) => o !== undefined);
    const accepted = outcomes.filter((o) => o === undefined).length;
    expect(refused?.code).toBe(Code.ResourceExhausted);
    // 16 steers per turn, or 16 MiB of them: whichever comes first.
    expect(refused?.rawMessage).toMatch(/limit per turn is 16|--max-waiting-input-bytes/);
    expect(outcomes.every((o) => o === undefined || o.code === Code.ResourceExhausted)).toBe(true);
    expect(accepted).toBeGreaterThanOrEqual(14);
    expect(accepted).toBeLessThanOrEqual(16);
    expect(await serving()).toBe(true);
    // Cancel the long turn: the accepted steers then run as turns and the work completes.
    await acme.sendInvocationInput({
      agent: "long-turn",
      snapshotId: output.snapshotId,
      input: { cancel: true, requestId: "stop-long" } as AgentInput,
    });
    let last: SnapshotStatus | undefined;
    for await (const res of acme.watchSnapshot({ agent: "long-turn", snapshotId: output.snapshotId }))
      last = res.status;
    expect(last).toBe(SnapshotStatus.COMPLETED);
  });
});

describe("steers posted for detached work on another instance (shared SQLite store)", () => {
  let shared: SharedStore;
  let a: AgentdProcess;
  let b: AgentdProcess;
  beforeAll(async () => {
    shared = await sharedStores.sqlite!();
    // A heartbeat every 3 s: posted steers wait that long for A to answer them.
    const args = [
      "test/fixtures/hostile-agents.ts",
      "--store",
      shared.uri,
      "--heartbeat-interval-ms",
      "3000",
      "--heartbeat-ttl-ms",
      "30000",
    ];
    [a, b] = await Promise.all([startAgentd({ args }), startAgentd({ args })]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await shared?.stop();
  });

  it("refuses a steer posted through B once 4 MiB of unanswered steers wait on the row, nothing of it posted; the others are answered", async () => {
    const onA = createClient(AgentServiceDesc, createGrpcTransport({ baseUrl: a.baseUrl }));
    const onB = createClient(AgentServiceDesc, createGrpcTransport({ baseUrl: b.baseUrl }));
    const chat = new WireChat(onA, { init: { agent: "long-turn" }, input: textInput("long remote") as AgentInput });
    await chat.nextChunk();
    chat.send({ input: { detach: true } as AgentInput });
    const { output } = await chat.drain();
    const big = "z".repeat(1024 * 1024);
    // At once: each is posted on the row, then waits for A's ack (at its next heartbeat, every 3 s).
    const posts = Array.from({ length: 6 }, (_, i) =>
      onB
        .sendInvocationInput({
          agent: "long-turn",
          snapshotId: output.snapshotId,
          input: { ...textInput(`${i}${big}`), steer: true, requestId: `remote-${i}` } as AgentInput,
        })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        ),
    );
    const outcomes = await Promise.all(posts);
    const refused = outcomes.filter((o) => o !== undefined);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const err of refused) {
      expect(err!.code).toBe(Code.ResourceExhausted);
      expect(err!.rawMessage).toMatch(/limit of 4194304 bytes \(posted steers, fixed\)/);
    }
    expect(outcomes.filter((o) => o === undefined).length).toBeGreaterThanOrEqual(3);
    await onB.sendInvocationInput({
      agent: "long-turn",
      snapshotId: output.snapshotId,
      input: { cancel: true, requestId: "remote-stop" } as AgentInput,
    });
  });
});

describe("the limits follow their flags", () => {
  let small: AgentdProcess;
  beforeAll(async () => {
    small = await startAgentd({
      args: [
        "test/fixtures/agents.ts",
        "test/fixtures/hostile-agents.ts",
        "--max-patch-operations",
        "2",
        "--max-patch-bytes",
        "2048",
        "--max-waiting-input-bytes",
        "4096",
      ],
    });
  });
  afterAll(async () => {
    await small?.stop();
  });

  it("--max-patch-operations, --max-patch-bytes and --max-waiting-input-bytes set the bounds they name", async () => {
    const client = clientWithToken(small.baseUrl, undefined);
    const { snapshots } = await notesSession(client, ["a"]);
    const fork = (statePatch: Op[]) =>
      client
        .run({
          init: { agent: "ledger-notes", snapshotId: snapshots[0], statePatch: ops(statePatch) },
          input: textInput("b"),
        })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
    const three = await fork(Array.from({ length: 3 }, () => ({ op: "test", path: "/count", value: 1 })));
    expect(three?.rawMessage).toMatch(/3 operations; the limit is 2 \(--max-patch-operations\)/);
    const big = await fork([{ op: "add", path: "/notes/-", value: "n".repeat(3000) }]);
    expect(big?.code).toBe(Code.ResourceExhausted);
    expect(big?.rawMessage).toMatch(/more than 2048 bytes \(--max-patch-bytes/);
    expect(await fork([{ op: "add", path: "/notes/-", value: "n".repeat(1000) }])).toBeUndefined();

    const chat = new WireChat(client, { init: { agent: "long-turn" }, input: textInput("long turn") as AgentInput });
    await chat.nextChunk();
    chat.send({ input: { ...textInput("s".repeat(3000)), steer: true } as AgentInput });
    chat.send({ input: { ...textInput("t".repeat(3000)), steer: true } as AgentInput });
    const err = await chat.drain().then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.ResourceExhausted);
    expect(err?.rawMessage).toMatch(/limit of 4096 \(--max-waiting-input-bytes\)/);
  });
});
