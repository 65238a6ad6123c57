// `npm run lint` (part of `npm test`): typescript-eslint's recommended rules on
// every TypeScript file, and the layer rule that keeps imports pointing down
// (scripts/architecture-layers.mjs). Formatting is Prettier's (`npm run format`).
import js from "@eslint/js";
import prettier from "eslint-config-prettier";
import boundaries from "eslint-plugin-boundaries";
import globals from "globals";
import tseslint from "typescript-eslint";
import { LAYERS } from "./scripts/architecture-layers.mjs";

/** One policy per floor: a file may import its own floor and the floors it lists. */
const layerPolicies = LAYERS.map((layer) => ({
  from: { element: { type: layer.type } },
  allow: { to: { element: { types: { anyOf: [layer.type, ...layer.allow] } } } },
}));

export default tseslint.config(
  {
    ignores: [
      "dist/**",
      ".test-dist/**",
      "gen/**",
      "node_modules/**",
      "clients/**",
      ".tools/**",
      "proto-vendor/**",
      "test/mongo-java-server/**",
      // Stryker's sandboxes (copies of the project), left behind by an interrupted `npm run mutation`.
      ".stryker/**",
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      // `_name` marks a value deliberately left unused (e.g. a field dropped by destructuring).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_", ignoreRestSiblings: true },
      ],
    },
  },
  {
    files: ["src/**/*.ts", "stores/**/*.ts", "examples/**/*.ts"],
    plugins: { boundaries },
    settings: {
      "boundaries/elements": LAYERS.map(({ type, pattern }) => ({ type, pattern, partialMatch: false })),
      "boundaries/include": ["src/**/*.ts", "stores/**/*.ts", "examples/**/*.ts", "gen/ts/**/*.ts"],
      "import/resolver": { typescript: { project: "./tsconfig.json" } },
    },
    rules: {
      "boundaries/dependencies": ["error", { default: "disallow", policies: layerPolicies }],
      "boundaries/no-unknown-files": "error",
    },
  },
  {
    // The inspector runs in browsers (bundled by scripts/build-inspector.mjs).
    files: ["src/inspector/**/*.ts"],
    languageOptions: { globals: globals.browser },
  },
  {
    // Tests read JSON off the wire and out of stored documents; `any` is the honest type there.
    files: ["test/**/*.ts", "bench/**/*.ts", "scripts/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  prettier,
);
