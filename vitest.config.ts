import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

/**
 * Test files run at once. Most of an end-to-end file's time is spent waiting on the processes
 * and sockets it drives, so more files than cores (vitest's default, cores - 1, is one file at a
 * time on a 2-core machine): cores + 2, at least 4 (on 2 cores beside a busy loop, 4 ran the
 * suite in 537 s where 3 took 574 s); AGENTD_TEST_WORKERS overrides.
 */
const WORKERS = Number(process.env.AGENTD_TEST_WORKERS) || Math.max(4, availableParallelism() + 2);

/**
 * The end-to-end suites that also run with every server on the MongoDB store: those whose
 * outcome goes through the store. Not client-managed (it never touches the store) nor bad-input
 * (validation before any store call; the stores' own NOT_FOUND and FAILED_PRECONDITION answers are
 * in the store conformance suites, which run on MongoDB).
 */
const STORE_AGNOSTIC_E2E = [
  "test/e2e/chat.test.ts",
  "test/e2e/run.test.ts",
  "test/e2e/snapshots.test.ts",
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
    // Safety nets for a loaded machine, not expectations: a passing test ends at its events.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    maxWorkers: WORKERS,
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
