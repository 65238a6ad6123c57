import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startAgentd } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

describe("file store", () => {
  it("survives a server restart: resume by session continues the history", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-restart-"));
    const first = await startAgentd({ args: ["--store", `file:${dir}`] });
    const before = await agentServiceClient(first.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: textInput("remember me"),
    });
    expect(await first.stop("SIGTERM")).toBe(0);

    const second = await startAgentd({ args: ["--store", `file:${dir}`] });
    try {
      const client = agentServiceClient(second.baseUrl, "grpc");
      const after = await client.run({
        init: { agent: "assistant", sessionId: before.output!.sessionId },
        input: textInput("still there?"),
      });
      const { snapshot } = await client.getSnapshot({ agent: "assistant", sessionId: before.output!.sessionId });
      expect(snapshot?.snapshotId).toBe(after.output!.snapshotId);
      expect(snapshot?.parentId).toBe(before.output!.snapshotId);
      expect(
        snapshot?.state?.messages.map((m) => (m.content[0]?.kind.case === "text" ? m.content[0].kind.value : "")),
      ).toEqual(["remember me", "echo: remember me", "still there?", "echo: still there?"]);
    } finally {
      await second.stop();
    }
  });
});
