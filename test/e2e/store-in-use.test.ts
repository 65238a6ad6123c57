import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { redactStoreUri } from "../../stores/redact-uri.js";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

// What the project's setup says (vitest.config.ts `provide`, test/harness/mongodb-global-setup.ts),
// compared with what the server itself reports, not with the harness's choice of `--store`.
const expectedStore = inject("e2eExpectedStore");
const providedUri = inject("e2eStoreUri") as string | undefined;

let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd(); // no --store: the project's default
});
afterAll(async () => {
  await server?.stop();
});

/** The store the server named in its `agentd listening` line (credentials redacted). */
const storeOfListeningLine = () => server.logLines().find((l) => l.msg === "agentd listening")?.store;

if (expectedStore === "mongodb") {
  describe("the e2e-mongodb project's servers", () => {
    it("get a MongoDB URI from the project's global setup", () => {
      expect(providedUri, "the global setup provided no e2eStoreUri").toMatch(
        /^mongodb(\+srv)?:\/\/.+\/agentd_e2e_[0-9a-z]+/,
      );
    });

    it("run on the MongoDB URI the global setup created, as their listening line says", () => {
      expect(storeOfListeningLine()).toBe(redactStoreUri(providedUri ?? "(none provided)"));
    });

    it("write their sessions into that MongoDB database", async () => {
      const { output } = await agentServiceClient(server.baseUrl, "grpc").run({
        init: { agent: "assistant" },
        input: textInput("where am I stored?"),
      });
      // Read the session back from MongoDB directly, through a second store instance on the setup's URI.
      const store = await openStoreFromUri(providedUri!);
      try {
        expect(await store.getHead(output!.sessionId)).toMatchObject({
          agent: "assistant",
          headSnapshotId: output!.snapshotId,
        });
      } finally {
        await store.close?.();
      }
    });
  });
} else {
  describe("the default project's servers", () => {
    it("run on the memory store, as their listening line says", () => {
      expect(expectedStore).toBe("memory");
      expect(providedUri ?? "").toBe("");
      expect(storeOfListeningLine()).toBe("memory:");
    });
  });
}
