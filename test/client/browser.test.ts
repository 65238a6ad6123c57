import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentClient, createBrowserTransport, Code, type SnapshotStatus } from "../../src/client/browser.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

// The browser entry runs here on Node's global fetch, the same API browsers
// provide: it proves the fetch-based transports against a real server.
let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
});
afterAll(async () => {
  await server?.stop();
});

describe.each(["connect", "grpc-web"] as const)("browser transport (fetch) over %s", (protocol) => {
  const client = () => createAgentClient(server.baseUrl, { protocol });

  it("runs a turn and reads its snapshot", async () => {
    const output = await client().run("assistant", "from a browser");
    expect(output.message?.content[0]?.text).toBe("echo: from a browser");
    const snapshot = await client().getSnapshot("assistant", { sessionId: output.sessionId });
    expect(snapshot.snapshotId).toBe(output.snapshotId);
  });

  it("continues a session turn by turn with run()", async () => {
    const first = await client().run("assistant", "one");
    const second = await client().run("assistant", "two", { sessionId: first.sessionId });
    const snapshot = await client().getSnapshot("assistant", { snapshotId: second.snapshotId! });
    expect(snapshot.state?.messages.map((m) => m.content[0]?.text)).toEqual(["one", "echo: one", "two", "echo: two"]);
  });

  it("streams a turn with runStream", async () => {
    const run = client().runStream("assistant", "stream to the browser");
    const chunks = [];
    for await (const chunk of run) chunks.push(chunk);
    expect(chunks.filter((c) => c.modelChunk).length).toBeGreaterThan(1);
    expect((await run).message?.content[0]?.text).toBe("echo: stream to the browser");
  });

  it("streams watchSnapshot statuses of a detached run until terminal", async () => {
    const detached = await client().run("assistant", {
      message: { role: "user", content: [{ text: "later" }] },
      detach: true,
    });
    expect(detached.finishReason).toBe("detached");
    const seen: SnapshotStatus[] = [];
    for await (const status of client().watchSnapshot("assistant", detached.snapshotId!)) seen.push(status);
    expect(seen.at(-1)).toBe("completed");
  });

  it("maps an unknown agent to NOT_FOUND", async () => {
    await expect(client().listSnapshots("no-such-agent", "s")).rejects.toMatchObject({ code: Code.NotFound });
  });
});

describe("browser entry", () => {
  it("refuses gRPC proper with INVALID_ARGUMENT", () => {
    expect(() => createBrowserTransport("http://localhost", { protocol: "grpc" as never })).toThrow(
      expect.objectContaining({ code: Code.InvalidArgument }),
    );
  });

  it("bundles for the browser platform without any Node module", async () => {
    const entry = fileURLToPath(new URL("../../src/client/browser.ts", import.meta.url));
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      platform: "browser",
      format: "esm",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((p) => p.includes("connect-web"))).toBe(true);
    expect(inputs.filter((p) => p.includes("connect-node") || p.startsWith("node:"))).toEqual([]);
  });
});
