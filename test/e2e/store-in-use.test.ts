import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import { defaultStoreUri, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd();
});
afterAll(async () => {
  await server?.stop();
});

describe("the store this project's servers run on", () => {
  it("is the one the project expects, and the server really writes sessions into it", async () => {
    const expected = inject("e2eExpectedStore");
    const listening = server.logLines().find((l) => l.msg === "agentd listening")!;
    const { output } = await agentServiceClient(server.baseUrl, "grpc").run({ init: { agent: "assistant" }, input: textInput("where am I stored?") });
    if (expected === "mongodb") {
      expect(String(listening.store)).toMatch(/^mongodb:\/\//);
      // Read the session back from MongoDB directly, through a second store instance on the URI the setup created.
      const store = await openStoreFromUri(defaultStoreUri());
      try {
        const head = await store.getHead(output!.sessionId);
        expect(head).toMatchObject({ agent: "assistant", headSnapshotId: output!.snapshotId });
      } finally {
        await store.close?.();
      }
    } else {
      expect(expected).toBe("memory");
      expect(listening.store).toBe("memory:");
    }
  });
});
