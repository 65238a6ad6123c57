/**
 * The floors of the house: which folder may import which. Read by the lint
 * (eslint.config.js, rule boundaries/dependencies) and by scripts/house-figures.ts.
 * `entry` is the files directly in src/ (src/index.ts, src/gen.ts,
 * src/server.ts): the package's entry points, which re-export the floors below.
 * It comes last because a file is placed by the first floor whose pattern matches.
 * Lower floors never import higher ones; `server` and `client` share wire code
 * through `protocol` and never import each other; `streams` (pure stream
 * utilities) and `codec` (the content's wire form) sit below both `runtime` and
 * `protocol`, and the runtime never imports `protocol`; nothing imports `examples`.
 */
export const LAYERS = [
  { type: "gen", pattern: "gen/ts/**", allow: [] },
  { type: "foundation", pattern: ["src/types/**", "src/errors/**"], allow: [] },
  { type: "stores", pattern: "stores/**", allow: ["foundation"] },
  // The stream utilities (async channel, FIFO queue, stream tap, custom-state patches): pure, no wire types.
  { type: "streams", pattern: "src/streams/**", allow: ["foundation"] },
  // The agentd.v1 form of the runtime's content (messages, parts, JSON values, enums) and a message's
  // proto JSON: the runtime needs it too (init.messages_patch edits the history in proto-JSON form).
  { type: "codec", pattern: "src/codec/**", allow: ["gen", "foundation"] },
  { type: "protocol", pattern: "src/protocol/**", allow: ["gen", "foundation", "codec"] },
  { type: "models", pattern: "src/models/**", allow: ["foundation"] },
  { type: "runtime", pattern: "src/runtime/**", allow: ["foundation", "stores", "streams", "codec", "models"] },
  { type: "tools", pattern: "src/tools/**", allow: ["foundation", "models", "runtime"] },
  { type: "prompts", pattern: "src/prompts/**", allow: ["foundation", "models", "tools", "runtime"] },
  {
    type: "server",
    pattern: "src/server/**",
    allow: ["gen", "foundation", "stores", "streams", "protocol", "models", "runtime"],
  },
  { type: "client", pattern: "src/client/**", allow: ["gen", "foundation", "streams", "codec", "protocol"] },
  // The inspector (a browser app bundled by scripts/build-inspector.mjs) is a client of the public API.
  { type: "inspector", pattern: "src/inspector/**", allow: ["gen", "foundation", "codec", "protocol", "client"] },
  {
    type: "cli",
    pattern: "src/cli/**",
    allow: ["gen", "foundation", "stores", "codec", "protocol", "models", "tools", "runtime", "prompts", "server"],
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
      "codec",
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
