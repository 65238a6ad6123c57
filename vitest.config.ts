import { defineConfig } from "vitest/config";

/** The end-to-end suites that also run with every server on the MongoDB store. */
const STORE_AGNOSTIC_E2E = [
  "test/e2e/chat.test.ts",
  "test/e2e/run.test.ts",
  "test/e2e/snapshots.test.ts",
  "test/e2e/client-managed.test.ts",
  "test/e2e/bad-input.test.ts",
  "test/e2e/background.test.ts",
  "test/e2e/busy-sessions.test.ts",
  "test/e2e/tenant-isolation.test.ts",
  "test/e2e/exactly-once.test.ts",
];

/**
 * Every TypeScript test under test/ (unit, store conformance, end-to-end
 * against real processes) runs in the `default` project with servers on the
 * memory store; the `e2e-mongodb` project runs the store-agnostic end-to-end
 * suites again with servers on `--store mongodb://…` (mongo-java-server, or
 * MONGODB_URI when set).
 */
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      { test: { name: "default", include: ["test/**/*.test.ts"], provide: { e2eExpectedStore: "memory" } } },
      {
        test: {
          name: "e2e-mongodb",
          include: [...STORE_AGNOSTIC_E2E, "test/e2e/store-in-use.test.ts"],
          globalSetup: ["test/harness/mongodb-global-setup.ts"],
          hookTimeout: 300_000,
          provide: { e2eExpectedStore: "mongodb" },
        },
      },
    ],
  },
});
