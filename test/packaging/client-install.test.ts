/**
 * `@agentd-dev/agentd/client` as a client-only user gets it: the packed tarball installed
 * with `npm install --omit=dev --omit=optional --omit=peer` into a fresh
 * project (no tsx, no TypeScript), then a two-turn chat through the client
 * entry on plain `node` against a running server.
 */
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { installedPackages, NODE, npmInstall, packAgentd, run, tempProject } from "./npm-package.js";

/** The most packages a client-only install may bring (agentd itself included). */
const MAX_CLIENT_PACKAGES = 15;

/** Server-side packages a client-only install must not contain. */
const SERVER_SIDE = [
  "ai",
  "pg",
  "@modelcontextprotocol/sdk",
  "@ai-sdk/openai",
  "@ai-sdk/anthropic",
  "@ai-sdk/google",
  "mongodb",
  "pg",
  "pino",
  "dotprompt",
  "jose",
  "tsx",
  "zod",
  "typescript",
  "node",
];

const CLIENT_SCRIPT = `
import { createAgentClient, Code, ConnectError } from "@agentd-dev/agentd/client";
import { ChatRequestSchema } from "@agentd-dev/agentd/gen";
import { AgentService } from "@agentd-dev/agentd/gen/agentd/v1/agent_service_pb";

const client = createAgentClient(process.argv[2], { protocol: "grpc" });
const conversation = client.chat("assistant");
let streamed = "";
for await (const chunk of conversation.send("hello"))
  if (chunk.modelChunk) streamed += chunk.modelChunk.content.map((p) => p.text ?? "").join("");
const second = conversation.send("and again");
const end = await second;
const output = await conversation.output();
let notFound = false;
try { await client.run("no-such-agent", "hi"); }
catch (err) { notFound = ConnectError.from(err).code === Code.NotFound; }
console.log(JSON.stringify({
  streamed,
  secondTurnIndex: end.turnIndex,
  secondText: await second.text(),
  outputText: output.message?.content.map((p) => p.text ?? "").join(""),
  sessionId: output.sessionId,
  notFound,
  generated: [ChatRequestSchema.typeName, AgentService.typeName],
}));
`;

/** Type-checks the client entry's declarations as a TypeScript user would (skipLibCheck off). */
const CLIENT_TS = `
import { createAgentClient, type AgentClient, type TurnEnd } from "@agentd-dev/agentd/client";
import type { ChatRequest } from "@agentd-dev/agentd/gen";
const client: AgentClient = createAgentClient("http://127.0.0.1:1", { protocol: "connect" });
export const end: Promise<TurnEnd> = client.chat("assistant").send("hi").then((t) => t);
export type Request = ChatRequest;
`;

describe("@agentd-dev/agentd/client installed alone from the packed tarball", { timeout: 180_000 }, () => {
  let work: string;
  let project: string;
  let agentd: AgentdProcess | undefined;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "agentd-pack-client-"));
    const tarball = await packAgentd(work);
    project = await tempProject("client-only");
    await npmInstall(project, ["--omit=dev", "--omit=optional", "--omit=peer", tarball]);
    agentd = await startAgentd();
  }, 180_000);

  afterAll(async () => {
    await agentd?.stop();
    if (work) await rm(work, { recursive: true, force: true });
    if (project) await rm(project, { recursive: true, force: true });
  });

  it("installs at most 15 packages, none of them server-side", async () => {
    const packages = await installedPackages(project);
    console.log(`client-only install: ${packages.length} packages: ${packages.join(", ")}`);
    expect(packages).toContain("@agentd-dev/agentd");
    for (const name of SERVER_SIDE) expect(packages, name).not.toContain(name);
    expect(packages.length).toBeLessThanOrEqual(MAX_CLIENT_PACKAGES);
    // The count the README and docs/client-typescript.md tell a client-only user.
    for (const doc of ["README.md", "docs/client-typescript.md"]) {
      const text = await readFile(join(REPO_ROOT, doc), "utf8");
      expect(text, doc).toContain(`${packages.length} packages`);
    }
    // Only built JavaScript and declarations ship: no TypeScript sources, tests or benchmarks.
    const root = join(project, "node_modules/@agentd-dev/agentd");
    for (const absent of ["src", "test", "bench", "stores", "gen", "scripts", "proto", "clients"])
      expect(existsSync(join(root, absent)), absent).toBe(false);
    expect(existsSync(join(root, "dist/src/client/index.js"))).toBe(true);
    expect(existsSync(join(root, "dist/src/client/index.d.ts"))).toBe(true);
  });

  it("runs a two-turn chat through @agentd-dev/agentd/client on plain node", async () => {
    await writeFile(join(project, "chat.mjs"), CLIENT_SCRIPT);
    const { stdout } = await run(NODE, ["chat.mjs", agentd!.baseUrl], { cwd: project, timeoutMs: 60_000 });
    const result = JSON.parse(stdout.trim().split("\n").pop()!) as Record<string, unknown>;
    expect(result).toMatchObject({
      streamed: "echo: hello",
      secondTurnIndex: 1,
      secondText: "echo: and again",
      outputText: "echo: and again",
      notFound: true,
      generated: ["agentd.v1.ChatRequest", "agentd.v1.AgentService"],
    });
    expect(result.sessionId).toMatch(/\S/);
  });

  it("refuses a postgres:// store without the pg package with FAILED_PRECONDITION naming it", async () => {
    const script = `import { openStoreFromUri } from "@agentd-dev/agentd/stores";
try { await openStoreFromUri("postgres://agentd@127.0.0.1:1/agentd"); console.log("opened"); }
catch (e) { console.log(JSON.stringify({ status: e.status, message: e.message })); }`;
    const { stdout } = await run(NODE, ["--input-type=module", "-e", script], { cwd: project, timeoutMs: 60_000 });
    expect(JSON.parse(stdout.trim().split("\n").pop()!)).toEqual({
      status: "FAILED_PRECONDITION",
      message: "a postgres:// store needs the pg package, which is not installed: run npm install pg@8 in your project",
    });
  });

  it("loads the browser entry without Node-only transports", async () => {
    const { stdout } = await run(
      NODE,
      [
        "--conditions=browser",
        "--input-type=module",
        "-e",
        `const m = await import("@agentd-dev/agentd/client"); console.log(typeof m.createAgentClient, "createNodeTransport" in m);`,
      ],
      { cwd: project, timeoutMs: 30_000 },
    );
    expect(stdout.trim()).toBe("function false");
  });

  it("type-checks against the shipped declarations", async () => {
    await writeFile(join(project, "check.ts"), CLIENT_TS);
    await writeFile(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2023",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ["node"],
          typeRoots: [join(REPO_ROOT, "node_modules/@types")],
        },
        files: ["check.ts"],
      }),
    );
    await run(NODE, [join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"], {
      cwd: project,
      timeoutMs: 60_000,
    });
  });
});
