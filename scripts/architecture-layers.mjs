/**
 * The floors of the house: which folder may import which. Read by the lint
 * (eslint.config.js, rule boundaries/dependencies) and by scripts/house-figures.ts.
 * `entry` is the files directly in src/ (src/index.ts, src/gen.ts,
 * src/server.ts): the package's entry points, which re-export the floors below.
 * It comes last because a file is placed by the first floor whose pattern matches.
 * Lower floors never import higher ones; `server` and `client` share wire code
 * through `protocol` and never import each other; `streams` (pure stream
 * utilities) sits below both `runtime` and `protocol`; nothing imports `examples`.
 */
export const LAYERS = [
  { type: "gen", pattern: "gen/ts/**", allow: [] },
  { type: "foundation", pattern: ["src/types/**", "src/errors/**"], allow: [] },
  { type: "stores", pattern: "stores/**", allow: ["foundation"] },
  // The stream utilities (async channel, FIFO queue, stream tap, custom-state patches): pure, no wire types.
  { type: "streams", pattern: "src/streams/**", allow: ["foundation"] },
  { type: "protocol", pattern: "src/protocol/**", allow: ["gen", "foundation"] },
  { type: "models", pattern: "src/models/**", allow: ["foundation"] },
  { type: "runtime", pattern: "src/runtime/**", allow: ["foundation", "stores", "streams", "protocol", "models"] },
  { type: "tools", pattern: "src/tools/**", allow: ["foundation", "models", "runtime"] },
  { type: "prompts", pattern: "src/prompts/**", allow: ["foundation", "models", "tools", "runtime"] },
  {
    type: "server",
    pattern: "src/server/**",
    allow: ["gen", "foundation", "stores", "streams", "protocol", "models", "runtime"],
  },
  { type: "client", pattern: "src/client/**", allow: ["gen", "foundation", "streams", "protocol"] },
  // The inspector (a browser app bundled by scripts/build-inspector.mjs) is a client of the public API.
  { type: "inspector", pattern: "src/inspector/**", allow: ["gen", "foundation", "protocol", "client"] },
  {
    type: "cli",
    pattern: "src/cli/**",
    allow: ["gen", "foundation", "stores", "protocol", "models", "tools", "runtime", "prompts", "server"],
  },
  {
    type: "examples",
    pattern: "examples/**",
    allow: ["foundation", "models", "tools", "runtime", "prompts", "entry", "examples"],
  },
  {
    type: "entry",
    pattern: "src",
    allow: [
      "gen",
      "foundation",
      "stores",
      "streams",
      "protocol",
      "models",
      "tools",
      "runtime",
      "prompts",
      "server",
      "client",
      "cli",
    ],
  },
];
