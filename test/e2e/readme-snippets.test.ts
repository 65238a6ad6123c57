/**
 * Runs the TypeScript, Go and Python code blocks of README.md and of the docs
 * pages that hold what the README used to (SNIPPET_FILES), extracted from the
 * Markdown (so they cannot drift), against real agentd servers. Every block
 * runs unless a `<!-- not run: reason -->` comment sits just above it; those
 * are counted and printed. A block with `<!-- continues the block above -->` or
 * `<!-- continues "Heading" -->` above it runs appended to the block it continues.
 * The servers also serve test/e2e/docs-agents.ts (the pages' `notes`, `shopper`,
 * `planner`, `flaky`, `bank`). The blocks of docs/webhooks.md run against a server of their
 * own, the only one that sends webhooks, so their receivers get only their own block's event.
 *
 * The wrappers change only what a reader would fill in themselves:
 * - the address `127.0.0.1:50051` becomes the test server's;
 * - TypeScript: `from "@agentd-dev/agentd"` / `from "@agentd-dev/agentd/client"` import this checkout's
 *   sources (`src/index.ts`, `src/client/index.ts`); a block that uses `client`
 *   without creating one gets `createAgentClient(<server>, { protocol: "grpc" })`;
 *   a block that uses an agent exported by the README's previous agents module
 *   gets it imported from that module (the previous one of the same file); the process exits after the block (an
 *   open conversation would keep it alive).
 * - A TypeScript block whose first line is `// my-agents.ts` (or `// agents.ts`,
 *   the file `agentd init` writes) is an agents module: it is served with `agentd serve my-agents.ts`, and every agent it
 *   defines must be listed (a module exporting `authenticate` must refuse an
 *   unauthenticated call).
 * - Go: a block that starts with `package main` is a complete program, built
 *   as written; any other is the body of a function `… () error` (with a `ctx` unless it declares one) in a
 *   temporary module that uses clients/go and gen/go of this checkout by
 *   `replace`; the imports it uses are added; `client := agentd.NewClient(<server>)`
 *   when it creates no client. The body blocks are built together into one program (one link), each
 *   run in a process of its own; when that build fails, each is built alone.
 * - Python: runs with .tools/venv's python (the editable installs of
 *   gen/python and clients/python); `import datetime` and, when the block opens
 *   no `AgentClient`, `client = AgentClient(<server>)` come first.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { typeScriptScriptArgs } from "../harness/typescript-script.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { continuedCode, markdownCodeBlocks, type ReadmeCodeBlock } from "./readme-commands.js";

const README_ADDRESS = "127.0.0.1:50051";
/** The webhook receivers' port in the README; the test server sends its webhooks to a free port instead. */
const README_RECEIVER_PORT = 8080;
const SNIPPETS_DIR = join(REPO_ROOT, ".cache");
const PYTHON = join(REPO_ROOT, ".tools/venv/bin/python");
/** This checkout's Python client and generated code (the venv's editable installs may be another checkout's). */
const PYTHONPATH = [join(REPO_ROOT, "clients/python/src"), join(REPO_ROOT, "gen/python/src")].join(":");
/** The agents the docs pages call besides the examples (`notes`, `shopper`, `planner`, …), served by the test's agentd. */
const DOCS_AGENTS = join(REPO_ROOT, "test/e2e/docs-agents.ts");

/**
 * The Markdown files whose blocks run: the README and every docs page it
 * links that has TypeScript, Go or Python blocks. (A fragment of the client
 * reference pages that goes on from an earlier block is marked `<!-- continues … -->`.)
 */
const SNIPPET_FILES = [
  "README.md",
  "docs/install.md",
  "docs/agents.md",
  "docs/turns.md",
  "docs/sessions.md",
  "docs/background-work.md",
  "docs/webhooks.md",
  "docs/security.md",
  "docs/limits.md",
  "docs/errors.md",
  "docs/observability.md",
  "docs/protocols.md",
  "docs/releasing.md",
  "docs/prompt-agents.md",
  "docs/server.md",
  "docs/client-typescript.md",
  "docs/client-go.md",
  "docs/client-python.md",
];

/**
 * What a block's output must show, by `file:heading/lang` (`file:heading/lang#2` for the second
 * such block under that heading) or, in any file, by `heading/lang`; every block must also exit 0.
 */
const EXPECTED_OUTPUT: Record<string, RegExp[]> = {
  "docs/client-python.md:Cancel and steer a turn/python": [
    /^INPUT_ACK_RESULT_CANCELLED$/m,
    /^FINISH_REASON_ABORTED$/m,
    /^INPUT_ACK_RESULT_(STEERED|QUEUED)$/m,
  ],
  "docs/client-python.md:Resume by session (or snapshot)/python": [/^resumed at turn 2$/m],
  "docs/client-python.md:Resume by session (or snapshot)/python#2": [/"alpha"[\s\S]*"beta"/],
  "docs/client-python.md:Busy sessions/python#2": [/^done: unpack$/m],
  "docs/client-python.md:Detach, watch and abort/python#2": [/^SNAPSHOT_STATUS_ABORTED$/m],
  "docs/client-python.md:Detach, watch and abort/python#3": [/^1 /m],
  "docs/client-python.md:asyncio/python": [/^SNAPSHOT_STATUS_COMPLETED$/m],
  "docs/client-typescript.md:Cancel and steer a turn/ts": [/^(steered|queued)$/m],
  "docs/client-typescript.md:Resume by session (or snapshot)/ts#3": [/^done: unpack$/m],
  "docs/client-go.md:Cancel and steer a turn/go": [
    /^INPUT_ACK_RESULT_CANCELLED$/m,
    /^FINISH_REASON_ABORTED$/m,
    /^INPUT_ACK_RESULT_(STEERED|QUEUED)$/m,
  ],
  "docs/client-go.md:Resume/go": [/^1 0 \d+/m],
  "docs/client-go.md:Resume/go#2": [/map\[notes:\[milk eggs\]\]/],
  "docs/client-go.md:Busy sessions/go": [/^echo: next$/m],
  "docs/client-go.md:Busy sessions/go#2": [/^done: unpack$/m],
  "docs/client-go.md:Detach, watch, abort/go#2": [/^FINISH_REASON_STOP <nil>$/m],
  "docs/client-go.md:Retries and request IDs/go": [/^echo: charge the card 0$/m],
  "docs/client-go.md:Sessions: list, label, delete, expire/go": [/map\[topic:refunds\]/, /^true <nil>$/m],
  "docs/prompt-agents.md:An interrupting tool, and resuming it/ts": [
    /^tool results: transfer=\{"status":"declined","amount":0\}$/m,
  ],
  "docs/prompt-agents.md:An interrupting tool, and resuming it/go": [/^tool results: transfer=\{.*"declined".*\}$/m],
  "docs/prompt-agents.md:An interrupting tool, and resuming it/python": [
    /^tool results: transfer=\{.*"declined".*\}$/m,
  ],
  "docs/client-typescript.md:Client-managed state/ts": [/notes: \[ 'alpha', 'beta' \]/],
  "Define an agent/ts": [/items: \[ 'milk', 'eggs' \]/],
  "Call it from TypeScript/ts": [/echo: walk the dog|1 \S+ \{/, /^2$/m, /^stop \d+$/m, /unknown agent/],
  "Call it from Go/go": [
    /echo: hello/,
    /^turn 1$/m,
    /^echo: still there\? 2$/m,
    /SNAPSHOT_STATUS_COMPLETED/,
    /^FINISH_REASON_STOP \d+$/m,
    /unknown agent/,
    /^retries: 0$/m,
  ],
  "Call it from Python/python": [
    /^1 echo: and again$/m,
    /^SNAPSHOT_STATUS_COMPLETED$/m,
    /^FINISH_REASON_STOP \d+$/m,
    /StatusCode\.NOT_FOUND/,
  ],
  "docs/sessions.md:Sessions: list, label, delete, expire/ts": [/ 1\n/],
  "docs/sessions.md:Sessions: list, label, delete, expire/go": [/ 1\n/, /^deleted: true$/m],
  "docs/sessions.md:Sessions: list, label, delete, expire/python": [/ 1\n/],
  "Tracing a call across services/go": [/echo: hello traced trace [0-9a-f]{32}/],
  "Tracing a call across services/python": [/echo: hello traced trace [0-9a-f]{32}/],
  "Webhooks: background work announces its end/ts": [/^verified invocation\.\w+$/m],
  "At a glance/ts": [/inputTokens: 2/, /trace [0-9a-f]{32}/],
  "Webhooks: background work announces its end/go": [/^verified msg_[\w-]+$/m],
  "Webhooks: background work announces its end/python": [/^verified invocation\.\w+$/m],
};

const blocks = SNIPPET_FILES.flatMap((file) => markdownCodeBlocks(file, "ts", "go", "python"));
let server: AgentdProcess;
/**
 * The server of the Webhooks section's blocks, the only one with a webhook URL: the other sections'
 * sessions (deleted, expired, detached) announce nothing, so each receiver gets only its own block's event.
 */
let webhookServer: AgentdProcess;
/** The page whose blocks run against {@link webhookServer}. */
const WEBHOOKS_PAGE = "docs/webhooks.md";
let workDir: string;
let receiverPort: number;

/** The lowest port of the kernel's ephemeral range (what `listen(0)` and outgoing connections get), else 32768. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Whether `port` can be listened on now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
      .once("error", () => resolve(false))
      .listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/**
 * A port free now, below the ephemeral range: the Webhooks section's receivers listen on it in turn, and
 * between them no other test's `listen(0)` or outgoing connection can take it (a port from the ephemeral
 * range was taken once in CI between two receivers: EADDRINUSE).
 */
async function freePort(): Promise<number> {
  const low = ephemeralLow();
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between 10000 and ${low}`);
}

beforeAll(async () => {
  mkdirSync(SNIPPETS_DIR, { recursive: true });
  workDir = mkdtempSync(join(SNIPPETS_DIR, "readme-snippets-"));
  // The Webhooks section's receivers read the secret from AGENTD_WEBHOOK_SECRET (the snippets inherit the environment).
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const secretFile = join(workDir, "webhook-secrets");
  writeFileSync(secretFile, `${secret}\n`);
  process.env.AGENTD_WEBHOOK_SECRET = secret;
  receiverPort = await freePort();
  [server, webhookServer] = await Promise.all([
    startAgentd({ args: [DOCS_AGENTS] }),
    startAgentd({
      args: [
        DOCS_AGENTS,
        "--webhook-url",
        `http://127.0.0.1:${receiverPort}/`,
        "--webhook-secret-file",
        secretFile,
        "--webhook-allow-private",
      ],
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([server?.stop(), webhookServer?.stop()]);
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  const counts = (pred: (b: ReadmeCodeBlock) => boolean) =>
    ["ts", "go", "python"].map((l) => `${l} ${blocks.filter((b) => b.lang === l && pred(b)).length}`).join(", ");
  console.log(
    `Snippets: run ${counts((b) => !b.notRun)}; not run (marked <!-- not run -->) ${counts((b) => !!b.notRun)}`,
  );
});

function exec(
  file: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      {
        cwd: options.cwd,
        env: { ...process.env, ...options.env },
        timeout: options.timeoutMs ?? 90_000,
        maxBuffer: 16 << 20,
      },
      (err, stdout, stderr) =>
        err
          ? reject(
              Object.assign(new Error(`${file} ${args.join(" ")} failed: ${err.message}\n${stdout}\n${stderr}`), {
                stdout,
                stderr,
              }),
            )
          : resolve(stdout),
    );
  });
}

/** The server `block` runs against. */
function serverFor(block: ReadmeCodeBlock): AgentdProcess {
  return block.file === WEBHOOKS_PAGE ? webhookServer : server;
}

function withServerAddress(code: string, target: AgentdProcess): string {
  return code
    .replaceAll(README_ADDRESS, target.target)
    .replaceAll(`127.0.0.1:${README_RECEIVER_PORT}`, `127.0.0.1:${receiverPort}`)
    .replaceAll(`listen(${README_RECEIVER_PORT},`, `listen(${receiverPort},`)
    .replaceAll(`("127.0.0.1", ${README_RECEIVER_PORT})`, `("127.0.0.1", ${receiverPort})`);
}

/** The README's imports of the package, pointed at this checkout's sources. */
function withLocalImports(code: string): string {
  return code
    .replaceAll('from "@agentd-dev/agentd/client"', `from ${JSON.stringify(join(REPO_ROOT, "src/client/index.ts"))}`)
    .replaceAll('from "@agentd-dev/agentd"', `from ${JSON.stringify(join(REPO_ROOT, "src/index.ts"))}`);
}

const isAgentsModule = (b: ReadmeCodeBlock) => b.lang === "ts" && /^\/\/ (my-)?agents\.ts\b/.test(b.code);

/** The `export const NAME` names of a TypeScript module. */
const exportedNames = (code: string) => [...code.matchAll(/^export const (\w+)/gm)].map((m) => m[1]!);

let counter = 0;

async function runAgentsModule(block: ReadmeCodeBlock): Promise<void> {
  const dir = join(workDir, `module-${++counter}`);
  mkdirSync(dir);
  const file = join(dir, "my-agents.ts");
  writeFileSync(file, withLocalImports(block.code));
  const served = await startAgentd({ args: [file], examples: "cli-default" });
  try {
    const client = agentServiceClient(served.baseUrl, "grpc");
    const names = [...block.code.matchAll(/define\w*Agent\(\{\s*name: "([^"]+)"/g)].map((m) => m[1]!);
    if (exportedNames(block.code).includes("authenticate")) {
      await expect(client.listAgents({})).rejects.toSatisfy((e) => ConnectError.from(e).code === Code.Unauthenticated);
    } else {
      expect(names.length).toBeGreaterThan(0);
      const { agents } = await client.listAgents({});
      expect(agents.map((a) => a.name).sort()).toEqual([...names].sort());
    }
  } finally {
    await served.stop();
  }
}

async function runTypeScript(block: ReadmeCodeBlock, previousModule: ReadmeCodeBlock | undefined): Promise<string> {
  const dir = join(workDir, `ts-${++counter}`);
  mkdirSync(dir);
  const prelude: string[] = [];
  if (previousModule) {
    writeFileSync(join(dir, "my-agents.ts"), withLocalImports(previousModule.code));
    const used = exportedNames(previousModule.code).filter(
      (n) => new RegExp(`\\b${n}\\b`).test(block.code) && !new RegExp(`(const|let|function) ${n}\\b`).test(block.code),
    );
    if (used.length) prelude.push(`import { ${used.join(", ")} } from "./my-agents.ts";`);
  }
  if (/\bclient\./.test(block.code) && !/const client\b/.test(block.code)) {
    prelude.push(`import { createAgentClient as __createAgentClient } from "@agentd-dev/agentd/client";`);
    prelude.push(`const client = __createAgentClient("http://${README_ADDRESS}", { protocol: "grpc" });`);
  }
  // No process.exit at the end: a block that leaves a conversation or stream open never exits, and fails here.
  const script = withLocalImports(withServerAddress([...prelude, block.code, ""].join("\n"), serverFor(block)));
  const file = join(dir, "snippet.mts");
  writeFileSync(file, script);
  // On the test command's built copy with Node's own type stripping (a block must be erasable TypeScript, as a
  // user's would under Node), else through tsx: see typeScriptScriptArgs.
  return exec(process.execPath, [...typeScriptScriptArgs(), file], { cwd: dir });
}

const GO_IMPORTS: [RegExp, string][] = [
  [/\bfmt\./, '"fmt"'],
  [/\bos\./, '"os"'],
  [/\btime\./, '"time"'],
  [/\bconnect\./, '"connectrpc.com/connect"'],
  [/\bstructpb\./, '"google.golang.org/protobuf/types/known/structpb"'],
  [/\bagentdv1\./, 'agentdv1 "github.com/agentd-dev/agentd/gen/go/agentd/v1"'],
  [/\botelconnect\./, '"connectrpc.com/otelconnect"'],
  [/\botel\./, '"go.opentelemetry.io/otel"'],
  [/\bpropagation\./, '"go.opentelemetry.io/otel/propagation"'],
  [/\bsdktrace\./, 'sdktrace "go.opentelemetry.io/otel/sdk/trace"'],
  [/\bhttp\./, '"net/http"'],
  [/\bio\./, '"io"'],
  [/\berrors\./, '"errors"'],
  [/\blog\./, '"log"'],
  [/\bstandardwebhooks\./, 'standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"'],
];

/** A Go module in a new directory of {@link workDir} that uses clients/go and gen/go of this checkout. */
function goModuleDir(name: string): string {
  const dir = join(workDir, name);
  mkdirSync(dir);
  const goMod = [
    "module readmesnippet",
    "",
    "go 1.26",
    "",
    "require (",
    "\tgithub.com/agentd-dev/agentd/clients/go v0.0.0",
    "\tgithub.com/agentd-dev/agentd/gen/go v0.0.0",
    "\tgithub.com/standard-webhooks/standard-webhooks/libraries v0.0.1",
    ")",
    "",
    `replace github.com/agentd-dev/agentd/clients/go => ${join(REPO_ROOT, "clients/go")}`,
    `replace github.com/agentd-dev/agentd/gen/go => ${join(REPO_ROOT, "gen/go")}`,
    "",
  ].join("\n");
  writeFileSync(join(dir, "go.mod"), goMod);
  copyFileSync(join(REPO_ROOT, "clients/go/go.sum"), join(dir, "go.sum"));
  return dir;
}

const GO_ENV = { GOFLAGS: "-mod=mod", GOWORK: "off" };

/** Builds the module in `dir` into `dir/snippet`. */
function goBuild(dir: string): Promise<string> {
  return exec("go", ["build", "-o", "snippet", "."], { cwd: dir, env: GO_ENV, timeoutMs: 240_000 });
}

/** Whether `block` is a complete Go program (built as written) rather than the body of a function. */
const isGoProgram = (block: ReadmeCodeBlock) => block.code.startsWith("package main\n");

/**
 * The wrapper of a Go body block: the imports it uses (always context, fmt, os and the client) and the
 * statements of the function it becomes (a `ctx` unless it declares one, a `client` unless it creates one,
 * the block, `return nil`). The block compiles as written: no variable of it may go unused (a user copies it
 * as is).
 */
function goBody(block: ReadmeCodeBlock): { imports: string[]; statements: string } {
  const target = serverFor(block).target;
  const body = withServerAddress(block.code, serverFor(block));
  const imports = ['"context"', '"fmt"', '"os"', '"github.com/agentd-dev/agentd/clients/go/agentd"'];
  const code = body.replace(/\/\/.*$/gm, ""); // a package named in a comment only is not imported
  for (const [use, path] of GO_IMPORTS) if (use.test(code) && !imports.includes(path)) imports.push(path);
  const statements = [
    // A block that starts from its own ctx (`ctx := context.Background()`) declares it; the others get one.
    ...(/\bctx := /.test(body) ? [] : ["\tctx := context.Background()", "\t_ = ctx"]),
    ...(/\bclient :?= /.test(body) ? [] : [`\tclient := agentd.NewClient("http://${target}")`]),
    body,
    "\treturn nil",
  ].join("\n");
  return { imports, statements };
}

/** The end of a Go `main`: runs `run() error` and exits 1 with the error when it fails. */
const GO_RUN_OR_EXIT = ["\tif err := run(); err != nil {", "\t\tfmt.Fprintln(os.Stderr, err)", "\t\tos.Exit(1)", "\t}"];

const goImports = (imports: string[]) => `import (\n\t${imports.join("\n\t")}\n)`;

/** One Go body block as a program of its own: `main` runs it as `run() error`. */
function goProgramOf(block: ReadmeCodeBlock): string {
  const { imports, statements } = goBody(block);
  return [
    "package main",
    "",
    goImports(imports),
    "",
    "func main() {",
    ...GO_RUN_OR_EXIT,
    "}",
    "",
    "func run() error {",
    statements,
    "}",
    "",
  ].join("\n");
}

/**
 * Every Go body block of the pages, built once into one program (one compile and one link instead of one per
 * block: most of a block's build is the link): block `i` is the function `snippet<i>` in its own file with
 * its own imports, and `snippet <i>` runs it. Undefined when that build fails: each block is then built on
 * its own, so the failure is reported against the block that causes it.
 */
let goBodies: Promise<{ binary: string; names: Map<ReadmeCodeBlock, string> } | undefined> | undefined;

function buildGoBodies(): Promise<{ binary: string; names: Map<ReadmeCodeBlock, string> } | undefined> {
  goBodies ??= (async () => {
    const dir = goModuleDir("go-bodies");
    const names = new Map<ReadmeCodeBlock, string>();
    const bodies = blocks.filter((b) => b.lang === "go" && !b.notRun && !isGoProgram(b));
    bodies.forEach((block, i) => {
      const name = `snippet${i}`;
      names.set(block, name);
      const { imports, statements } = goBody({ ...block, code: continuedCode(block, blocks) });
      const file = [
        `// ${block.file}:${block.line}`,
        "package main",
        "",
        goImports(imports),
        "",
        `func init() { snippets["${name}"] = ${name} }`,
        "",
        "// The wrapper's imports stay used whatever the block uses.",
        "var _, _, _, _ = context.Background, fmt.Sprint, os.Exit, agentd.NewClient",
        "",
        `func ${name}() error {`,
        statements,
        "}",
        "",
      ].join("\n");
      writeFileSync(join(dir, `${name}.go`), file);
    });
    writeFileSync(
      join(dir, "main.go"),
      [
        "package main",
        "",
        'import (\n\t"fmt"\n\t"os"\n)',
        "",
        "var snippets = map[string]func() error{}",
        "",
        "func main() {",
        "\trun, ok := snippets[os.Args[1]]",
        "\tif !ok {",
        '\t\tfmt.Fprintln(os.Stderr, "no snippet", os.Args[1])',
        "\t\tos.Exit(2)",
        "\t}",
        ...GO_RUN_OR_EXIT,
        "}",
        "",
      ].join("\n"),
    );
    try {
      await goBuild(dir);
      return { binary: join(dir, "snippet"), names };
    } catch {
      return undefined;
    }
  })();
  return goBodies;
}

async function runGo(block: ReadmeCodeBlock, original: ReadmeCodeBlock): Promise<string> {
  if (!isGoProgram(block)) {
    const built = await buildGoBodies();
    const name = built?.names.get(original);
    if (built && name) return exec(built.binary, [name], { cwd: workDir });
  }
  const dir = goModuleDir(`go-${++counter}`);
  // A complete program is built exactly as written.
  const source = isGoProgram(block) ? withServerAddress(block.code, serverFor(block)) : goProgramOf(block);
  writeFileSync(join(dir, "main.go"), source);
  await goBuild(dir);
  return exec(join(dir, "snippet"), [], { cwd: dir });
}

async function runPython(block: ReadmeCodeBlock): Promise<string> {
  const dir = join(workDir, `py-${++counter}`);
  mkdirSync(dir);
  const prelude = ["import datetime", "from agentd_client import AgentClient as __AgentClient"];
  if (!/AgentClient\(/.test(block.code)) prelude.push(`client = __AgentClient("${README_ADDRESS}")`);
  const file = join(dir, "snippet.py");
  writeFileSync(file, withServerAddress([...prelude, block.code].join("\n"), serverFor(block)));
  return exec(PYTHON, [file], { cwd: dir, env: { PYTHONPATH } });
}

describe("the TypeScript, Go and Python snippets of the README and the docs it links, against real servers", () => {
  it("finds the README's first-project calls in all three languages", () => {
    for (const heading of ["Call it from TypeScript", "Call it from Go", "Call it from Python"]) {
      expect(blocks.filter((b) => b.file === "README.md" && b.heading === heading && !b.notRun)).toHaveLength(1);
    }
    expect(blocks.filter((b) => b.file === "README.md" && isAgentsModule(b))).toHaveLength(1);
    expect(blocks.filter((b) => b.file === "README.md" && b.notRun)).toEqual([]);
    expect(blocks.filter((b) => b.notRun).length).toBeLessThanOrEqual(16);
  });

  it("finds blocks in the docs pages the README's snippets moved to", () => {
    for (const file of ["docs/agents.md", "docs/sessions.md", "docs/webhooks.md", "docs/observability.md"]) {
      expect(blocks.filter((b) => b.file === file && !b.notRun).length, file).toBeGreaterThan(0);
    }
  });

  it("says why each block it does not run is not run (marked <!-- not run: … --> in README.md)", () => {
    const notRun = blocks.filter((b) => b.notRun);
    for (const block of notRun) expect(block.notRun!.trim().length, `${block.file}:${block.line}`).toBeGreaterThan(10);
    console.log(
      `Blocks not run (${notRun.length}):\n${notRun.map((b) => `  ${b.lang} at ${b.file}:${b.line}: ${b.notRun}`).join("\n")}`,
    );
  });

  let previousModule: ReadmeCodeBlock | undefined;
  for (const block of blocks) {
    const name = `${block.lang} block at ${block.file}:${block.line} (${block.heading})`;
    if (previousModule && previousModule.file !== block.file) previousModule = undefined;
    const module = previousModule;
    if (isAgentsModule(block)) previousModule = block;
    if (block.notRun) continue; // listed and justified by the test above
    it(name, { timeout: 300_000 }, async () => {
      if (isAgentsModule(block)) return runAgentsModule(block);
      // A block marked <!-- continues … --> runs after the code of the block it continues.
      const typed: ReadmeCodeBlock = { ...block, code: continuedCode(block, blocks) };
      const out =
        block.lang === "ts"
          ? await runTypeScript(typed, module)
          : block.lang === "go"
            ? await runGo(typed, block)
            : await runPython(typed);
      const nth = blocks
        .filter((b) => b.file === block.file && b.heading === block.heading && b.lang === block.lang)
        .indexOf(block);
      const expectations =
        (nth > 0 ? EXPECTED_OUTPUT[`${block.file}:${block.heading}/${block.lang}#${nth + 1}`] : undefined) ??
        EXPECTED_OUTPUT[`${block.file}:${block.heading}/${block.lang}`] ??
        EXPECTED_OUTPUT[`${block.heading}/${block.lang}`] ??
        [];
      for (const expected of expectations) expect(out).toMatch(expected);
    });
  }
});
