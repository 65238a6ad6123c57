import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

// An independent gRPC implementation (grpc-js + proto-loader, no Connect, no
// generated code): loads the .proto files at run time and speaks to agentd,
// proving the wire contract is plain gRPC.

type Plain = Record<string, any>;

let server: AgentdProcess;
let client: grpc.Client & Record<string, any>;
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
  const definition = await protoLoader.load("agentd/v1/agent_service.proto", {
    includeDirs: [join(REPO_ROOT, "proto")],
    keepCase: false,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as Plain;
  const AgentService = loaded.agentd.v1.AgentService as grpc.ServiceClientConstructor;
  client = new AgentService(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure()) as grpc.Client &
    Record<string, any>;
});
afterAll(async () => {
  client?.close();
  await server?.stop();
});

const userInput = (text: string): Plain => ({ message: { role: "ROLE_USER", content: [{ text }] } });

/** Reads responses until a TurnEnd chunk; returns the turn's chunks. */
async function readTurn(responses: AsyncIterator<Plain>): Promise<Plain[]> {
  const chunks: Plain[] = [];
  for (;;) {
    const next = await responses.next();
    if (next.done) throw new Error("stream ended before TurnEnd");
    expect(next.value.output).toBeNull();
    chunks.push(next.value.chunk);
    if (next.value.chunk.turnEnd) return chunks;
  }
}

const text = (chunks: Plain[]) =>
  chunks
    .flatMap((c) => c.modelChunk?.content ?? [])
    .map((p: Plain) => p.text ?? "")
    .join("");

describe("a plain @grpc/grpc-js client", () => {
  it("holds a two-turn Chat over the bidi stream: chunks, TurnEnds, then the output", async () => {
    const call = client.chat() as grpc.ClientDuplexStream<Plain, Plain>;
    const responses = call[Symbol.asyncIterator]() as AsyncIterator<Plain>;
    call.write({ init: { agent: "tasks" } });

    call.write({ input: userInput("buy milk") });
    const first = await readTurn(responses);
    expect(text(first)).toBe("Added task #1: buy milk");
    expect(first.filter((c) => c.modelChunk).length).toBeGreaterThan(1);
    const patch = first.find((c) => c.customPatch.length > 0)?.customPatch[0];
    expect(patch).toMatchObject({ op: "replace", path: "", value: { kind: "structValue" } });
    expect(first.find((c) => c.artifact)?.artifact.name).toBe("tasks.md");
    const firstEnd = first.at(-1)!.turnEnd;
    expect(firstEnd).toMatchObject({ finishReason: "FINISH_REASON_STOP", turnIndex: 0 });
    expect(firstEnd.snapshotId).not.toBe("");
    expect(firstEnd.sessionId).not.toBe("");

    call.write({ input: userInput("walk dog") });
    const second = await readTurn(responses);
    expect(text(second)).toBe("Added task #2: walk dog");
    const secondEnd = second.at(-1)!.turnEnd;
    expect(secondEnd).toMatchObject({
      finishReason: "FINISH_REASON_STOP",
      turnIndex: 1,
      sessionId: firstEnd.sessionId,
    });

    call.end();
    const last = await responses.next();
    expect(last.value.chunk).toBeNull();
    expect(last.value.output).toMatchObject({
      sessionId: firstEnd.sessionId,
      snapshotId: secondEnd.snapshotId,
      finishReason: "FINISH_REASON_STOP",
      message: { role: "ROLE_MODEL", content: [{ text: "Added task #2: walk dog" }] },
    });
    expect((await responses.next()).done).toBe(true);
  });

  it("reads ListAgents over unary gRPC", async () => {
    const response: Plain = await new Promise((resolve, reject) =>
      client.listAgents({}, (err: grpc.ServiceError | null, res: Plain) => (err ? reject(err) : resolve(res))),
    );
    const names = response.agents.map((a: Plain) => a.name);
    expect(names).toEqual(expect.arrayContaining(["assistant", "tasks", "notes"]));
    expect(response.agents.find((a: Plain) => a.name === "notes").stateManagement).toBe("STATE_MANAGEMENT_CLIENT");
  });

  it("gets NOT_FOUND as the gRPC status for an unknown agent", async () => {
    const err: grpc.ServiceError = await new Promise((resolve) =>
      client.run({ init: { agent: "no-such-agent" }, input: userInput("x") }, (e: grpc.ServiceError | null) =>
        resolve(e!),
      ),
    );
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(err.details).toContain("no-such-agent");
  });
});
