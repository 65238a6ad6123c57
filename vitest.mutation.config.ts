import { defineConfig } from "vitest/config";

/**
 * The fast, in-process tests that cover stores/, src/runtime/, src/streams/, src/codec/ and src/protocol/:
 * what `npm run mutation` (Stryker, stryker.config.mjs) runs against each mutant.
 * Store conformance runs on the memory store, SQLite, a real PostgreSQL server and mongo-java-server.
 */
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    include: [
      "test/runtime/**/*.test.ts",
      "test/stores/**/*.test.ts",
      "test/telemetry/**/*.test.ts",
      "test/protocol/**/*.test.ts",
      "test/streams/**/*.test.ts",
      "test/codec/**/*.test.ts",
    ],
    // buf over the proto files: covers no mutated code.
    exclude: ["test/protocol/proto-compatibility.test.ts"],
  },
});
