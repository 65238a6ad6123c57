import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../harness/fake-openai-server.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

// No secret in any log line or error (issue 36): store URIs of any shape at
// start-up, and provider keys of any shape that a provider echoes.

const PASSWORD = "hunter2-Store-Password";

/** The error agentd's start failed with (its message holds the exit code and all output). */
async function startFailure(args: string[]): Promise<Error> {
  return startAgentd({ args }).then(
    async (server) => {
      await server.stop();
      throw new Error("agentd started");
    },
    (e: Error) => e,
  );
}

describe("store URIs at start-up", () => {
  it.each([
    ["a mistyped scheme", `mongo://app:${PASSWORD}@db.example:27017/agentd`, "mongo://app:***@db.example"],
    ["no scheme", `app:${PASSWORD}@db.example/agentd`, "app:***@db.example"],
    ["an invalid database name", `mongodb://app:${PASSWORD}@127.0.0.1:1/a.b`, "mongodb://app:***@127.0.0.1:1/a.b"],
  ])("a URI with %s fails the start with exit 2 without printing its password", async (_name, uri, shown) => {
    const err = await startFailure(["--store", uri]);
    expect(err.message).toContain("exited with code 2");
    expect(err.message).toContain(shown);
    expect(err.message).not.toContain(PASSWORD);
  });

  it("a URI with a leading space is logged with its password hidden", async () => {
    // Nothing listens on port 1: the store is unreachable at start, which agentd logs and serves through.
    const uri = ` mongodb://app:${PASSWORD}@127.0.0.1:1/agentd?serverSelectionTimeoutMS=200`;
    const server = await startAgentd({ args: ["--store", uri] });
    try {
      expect(server.listening.store).toBe(" mongodb://app:***@127.0.0.1:1/agentd?serverSelectionTimeoutMS=200");
    } finally {
      await server.stop();
    }
    expect(server.logs()).not.toContain(PASSWORD);
  });
});

describe("a provider echoing a configured key of no recognisable shape", () => {
  // No sk-/AIza prefix, no key= parameter, and pieces shorter than the
  // 6-character fragments scrubbing also catches: only its value identifies it.
  const KEY = "Zx9~od.Sh4ped~kV.0042";
  let fake: FakeOpenAiServer;
  let server: AgentdProcess;
  beforeAll(async () => {
    fake = await startFakeOpenAiServer();
    server = await startAgentd({
      args: ["test/fixtures/prompt-agents.ts"],
      // Configured with blanks around it, as a key pasted from a file often is: the provider gets it trimmed.
      env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: ` ${KEY}\n` },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  it("the provider got the key the operator configured", async () => {
    await agentServiceClient(server.baseUrl, "grpc").run({ init: { agent: "remote" }, input: textInput("hi") });
    expect(fake.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("fails the turn UNAUTHENTICATED with the reason, and neither the caller nor the log sees the key", async () => {
    fake.enqueue({
      kind: "error",
      status: 401,
      message: `Incorrect API key provided: ${KEY}. Check the key.`,
      code: "invalid_api_key",
    });
    const { output } = await agentServiceClient(server.baseUrl, "grpc").run({
      init: { agent: "remote" },
      input: textInput("hi"),
    });
    expect(output!.finishReason).toBe(FinishReason.FAILED);
    expect(output!.error?.status).toBe("UNAUTHENTICATED");
    expect(output!.error?.message).toContain("Incorrect API key provided: [redacted]. Check the key.");
    for (const piece of ["Zx9", "Sh4ped", "0042"]) expect(output!.error?.message).not.toContain(piece);
    expect(await server.settledLogs()).not.toContain(KEY);
  });
});
