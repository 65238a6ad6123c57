import { defineConfig } from "vitest/config";

/** Vitest runs every TypeScript test under test/ (unit, conformance and e2e against real processes). */
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
