// `npm run mutation` (not part of `npm test`): Stryker mutates the store layer,
// the runtime, the stream utilities and the protocol codecs, runs the fast tests that cover each
// mutant (vitest.mutation.config.ts) and prints the score per folder and file
// with every surviving mutant. Results are kept in .stryker/ so a re-run only
// tests what changed (delete .stryker/ for a full run).
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts" },
  checkers: ["typescript"],
  tsconfigFile: "tsconfig.json",
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  mutate: [
    "stores/**/*.ts",
    "src/runtime/**/*.ts",
    "src/streams/**/*.ts",
    "src/codec/**/*.ts",
    "src/protocol/**/*.ts",
    "!**/index.ts",
  ],
  coverageAnalysis: "perTest",
  // Mutants in module-level code (constants, tables) need every test re-run per mutant (~45 s each here);
  // they are reported as ignored rather than run. The per-test mutants are the functions' behaviour.
  ignoreStatic: true,
  reporters: ["clear-text", "progress", "html", "json"],
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true, reportMutants: true },
  htmlReporter: { fileName: ".stryker/report/mutation.html" },
  jsonReporter: { fileName: ".stryker/report/mutation.json" },
  thresholds: { high: 90, low: 80, break: null },
  concurrency: 2,
  incremental: true,
  incrementalFile: ".stryker/incremental.json",
  tempDirName: ".stryker/tmp",
  cleanTempDir: "always",
  ignorePatterns: ["dist", ".tools", "clients", ".agentd", ".stryker"],
  timeoutMS: 20_000,
};
