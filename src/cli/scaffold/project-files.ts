/**
 * The files `agentd init` writes: a project that serves one agent with
 * `npm start` and tests it over the wire with `npm test`.
 */

import { AGENTD_PACKAGE } from "../package-name.js";

/** What the scaffold's files depend on. */
export interface ScaffoldOptions {
  /** The project's package name. */
  name: string;
  /** The npm dependency spec of agentd (a version range, or a tarball path for testing). */
  agentdSpec: string;
}

/** Versions the scaffold pins for its own tooling (the ones agentd itself is tested with). */
const TOOLING = { vitest: "5.1.1", typescript: "5.9.3", "@types/node": "24.19.2" } as const;

const AGENTS_TS = `// The agents this project serves: \`npm start\` runs \`agentd serve ./agents.ts\`.
import { z } from "zod";
import { defineCustomAgent, generateModelTurn, messageText } from "@agentd-dev/agentd";

/** Keeps a list of what was said in custom state and answers with the offline echo model. */
export const notes = defineCustomAgent({
  name: "notes",
  description: "Remembers every message and echoes it.",
  store: "default", // the server's --store (an SQLite database in ./.agentd by default)
  stateSchema: z.object({ notes: z.array(z.string()) }),
  turn: async (input, ctx) => {
    const note = messageText(input.message);
    ctx.session.updateCustom((s) => ({ notes: [...(s?.notes ?? []), note] }));
    return generateModelTurn(ctx, "echo"); // swap for "openai/gpt-4o-mini" etc. with its API key set
  },
});
`;

const TEST_TS = `// Starts \`agentd serve ./agents.ts\` on a free port and talks to it over gRPC, as a caller would.
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentClient } from "@agentd-dev/agentd/client";

let server: ChildProcess;
let url: string;

beforeAll(async () => {
  // The agentd command itself (not through npx, which would not pass the SIGTERM of afterAll on).
  server = spawn("node_modules/.bin/agentd", ["serve", "./agents.ts", "--port", "0", "--store", "memory:"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  url = await new Promise<string>((resolve, reject) => {
    let out = "";
    server.stdout!.on("data", (data: Buffer) => {
      out += data.toString();
      const line = out.split("\\n").find((l) => l.includes('"msg":"agentd listening"'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    server.once("exit", (code) => reject(new Error(\`agentd exited with code \${code}: \${out}\`)));
  });
}, 60_000);

afterAll(async () => {
  if (!server || server.exitCode !== null) return;
  const exited = new Promise((resolve) => server.once("exit", resolve));
  server.kill("SIGTERM");
  await exited;
});

describe("the notes agent", () => {
  it("answers each message and remembers it across turns", async () => {
    const client = createAgentClient(url, { protocol: "grpc" });
    const conversation = client.chat("notes");
    await conversation.send("buy milk");
    const end = await conversation.send("walk the dog");
    expect(end.turnIndex).toBe(1);
    expect(conversation.custom).toEqual({ notes: ["buy milk", "walk the dog"] });
    const output = await conversation.output();
    expect(output.message?.content.map((p) => p.text).join("")).toBe("echo: walk the dog");
  });
});
`;

const README_MD = (name: string) => `# ${name}

An [agentd](https://github.com/agentd-dev/agentd) project: \`agents.ts\` defines the agents.

\`\`\`sh
npm install
npm start      # serves agents.ts on 127.0.0.1:50051 (SQLite store in ./.agentd)
npm test       # starts a server on a free port and calls the agent over gRPC
\`\`\`

Call it: \`grpcurl -plaintext -d '{"init":{"agent":"notes"},"input":{"message":{"role":"ROLE_USER","content":[{"text":"hi"}]}}}' 127.0.0.1:50051 agentd.v1.AgentService/Run\`
`;

/** The scaffold's files, by path relative to the project directory. */
export function projectFiles(options: ScaffoldOptions): Record<string, string> {
  const manifest = {
    name: options.name,
    version: "0.1.0",
    private: true,
    type: "module",
    scripts: { start: "exec agentd serve ./agents.ts", test: "vitest run" },
    dependencies: { [AGENTD_PACKAGE]: options.agentdSpec },
    devDependencies: { ...TOOLING },
    engines: { node: ">=22.15" },
  };
  const tsconfig = {
    compilerOptions: {
      target: "es2023",
      module: "nodenext",
      moduleResolution: "nodenext",
      strict: true,
      skipLibCheck: true,
      noEmit: true,
    },
    include: ["*.ts", "test/**/*.ts"],
  };
  return {
    "package.json": JSON.stringify(manifest, null, 2) + "\n",
    "tsconfig.json": JSON.stringify(tsconfig, null, 2) + "\n",
    ".gitignore": "node_modules/\n.agentd/\n",
    "agents.ts": AGENTS_TS,
    "test/agents.test.ts": TEST_TS,
    "README.md": README_MD(options.name),
  };
}
