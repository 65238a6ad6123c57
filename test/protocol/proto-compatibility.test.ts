/**
 * The wire-contract check of `npm test` (scripts/check-proto-breaking.sh:
 * `buf breaking` against the committed proto/baseline/agentd-v1.binpb, FILE
 * rules from buf.yaml) fails on changes that break existing TypeScript, Go and
 * Python clients and passes additive ones. Each case copies proto/ (with the
 * committed baseline), proto-vendor/, buf.yaml and the script into a temporary
 * directory, edits a .proto file there and runs the script the way
 * scripts/test-all.sh runs it.
 */
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CHECK = "bash scripts/check-proto-breaking.sh";
const AGENT = "proto/agentd/v1/agent.proto";
const SERVICE = "proto/agentd/v1/agent_service.proto";

let workDir: string;
let counter = 0;

beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), "agentd-proto-compat-"));
});
afterAll(() => {
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

/** A copy of everything the check reads, in a fresh directory. */
function copyTree(): string {
  const dir = join(workDir, `tree-${++counter}`);
  for (const path of ["proto", "proto-vendor", "buf.yaml", "scripts/check-proto-breaking.sh"]) {
    cpSync(join(REPO_ROOT, path), join(dir, path), { recursive: true });
  }
  return dir;
}

/** Rewrites one file of a copied tree; `edit` must change it. */
function edit(dir: string, path: string, change: (text: string) => string): void {
  const before = readFileSync(join(dir, path), "utf8");
  const after = change(before);
  expect(after, `the edit of ${path} changed nothing`).not.toBe(before);
  writeFileSync(join(dir, path), after);
}

/** The `{ … }` body of `message Name` / `enum Name` / `service Name`: [start of body, index of its `}`]. */
function block(text: string, kind: string, name: string): [number, number] {
  const open = text.indexOf(`\n${kind} ${name} {`);
  if (open < 0) throw new Error(`no ${kind} ${name}`);
  let depth = 0;
  for (let i = text.indexOf("{", open); i < text.length; i++) {
    if (text[i] === "{") depth++;
    if (text[i] === "}" && --depth === 0) return [text.indexOf("{", open) + 1, i];
  }
  throw new Error(`unclosed ${kind} ${name}`);
}

/** Appends a line to a block; `line` gets a number one above every number the block uses. */
function appendToBlock(kind: string, name: string, line: (next: number) => string) {
  return (text: string) => {
    const [start, end] = block(text, kind, name);
    const numbers = [...text.slice(start, end).matchAll(/=\s*(\d+)\s*[;[]/g)].map((m) => Number(m[1]));
    return `${text.slice(0, end)}  ${line(Math.max(0, ...numbers) + 1)}\n${text.slice(end)}`;
  };
}

interface Result {
  code: number;
  output: string;
}

/** Runs a command in a copied tree with this checkout's node_modules/.bin (buf) on PATH. */
function run(dir: string, command: string): Promise<Result> {
  const env = { ...process.env, PATH: `${join(REPO_ROOT, "node_modules/.bin")}${delimiter}${process.env.PATH ?? ""}` };
  return new Promise((resolve) => {
    execFile("bash", ["-c", command], { cwd: dir, env, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

describe("the wire-contract check (buf breaking against proto/baseline/agentd-v1.binpb)", () => {
  it("is what the test command runs, and `npm run proto:baseline` moves the baseline", () => {
    expect(readFileSync(join(REPO_ROOT, "scripts/test-all.sh"), "utf8")).toMatch(
      /^run_step proto-breaking ".*" bash scripts\/check-proto-breaking\.sh$/m,
    );
    const scripts = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).scripts;
    expect(scripts["proto:baseline"]).toBe(`${CHECK} --update-baseline`);
  });

  it("passes on the unchanged contract", async () => {
    const result = await run(copyTree(), CHECK);
    expect(result.output).toContain("proto/ is compatible with proto/baseline/agentd-v1.binpb");
    expect(result.code).toBe(0);
  });

  it("fails on a renumbered field and names it", async () => {
    const dir = copyTree();
    edit(dir, AGENT, (t) => t.replace("string session_id = 2;", "string session_id = 99;"));
    const result = await run(dir, CHECK);
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(
      /agent\.proto:\d+:\d+:Previously present field "2" with name "session_id" on message "AgentInit" was deleted/,
    );
    expect(result.output).toContain("breaks the agentd.v1 wire contract");
  });

  it("fails on a renamed field (the wire stays, generated code and JSON break)", async () => {
    const dir = copyTree();
    edit(dir, AGENT, (t) => t.replace("string session_id = 2;", "string session = 2;"));
    const result = await run(dir, CHECK);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('Field "2" on message "AgentInit" changed name from "session_id" to "session"');
  });

  it("fails on a message moved to another file of the package (Python's agent_service_pb2 and TS imports break)", async () => {
    const dir = copyTree();
    edit(dir, SERVICE, (t) => t.replace("\nmessage ListAgentsRequest {}\n", "\n"));
    edit(dir, AGENT, (t) => `${t}\nmessage ListAgentsRequest {}\n`);
    const result = await run(dir, CHECK);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('Previously present message "ListAgentsRequest" was deleted from file');
  });

  it("fails on a removed RPC", async () => {
    const dir = copyTree();
    edit(dir, SERVICE, (t) => t.replace(/\n.*\n\s*rpc Abort\(AbortRequest\) returns \(AbortResponse\);/, ""));
    const result = await run(dir, CHECK);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('Previously present RPC "Abort" on service "AgentService" was deleted');
  });

  it("passes additive changes: a new field, enum value, RPC, message", async () => {
    const dir = copyTree();
    edit(
      dir,
      AGENT,
      appendToBlock("message", "AgentInit", (n) => `string added_note = ${n};`),
    );
    edit(
      dir,
      AGENT,
      appendToBlock("enum", "BusyPolicy", (n) => `BUSY_POLICY_ADDED = ${n};`),
    );
    edit(
      dir,
      SERVICE,
      appendToBlock("service", "AgentService", () => "rpc Ping(PingRequest) returns (PingResponse);"),
    );
    edit(dir, SERVICE, (t) => `${t}\nmessage PingRequest {}\n\nmessage PingResponse {\n  string pong = 1;\n}\n`);
    const result = await run(dir, CHECK);
    expect(result.output).toContain("proto/ is compatible");
    expect(result.code).toBe(0);
  });

  it("`npm run proto:baseline` accepts a deliberate break: the check passes against the new baseline", async () => {
    const dir = copyTree();
    edit(dir, AGENT, (t) => t.replace("string session_id = 2;", "string session_id = 99;"));
    expect((await run(dir, CHECK)).code).not.toBe(0);
    const scripts = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).scripts;
    const update = await run(dir, scripts["proto:baseline"]);
    expect(update.code, update.output).toBe(0);
    expect(update.output).toContain("The baseline moves past the breaking changes above");
    const after = await run(dir, CHECK);
    expect(after.code, after.output).toBe(0);
  });

  it("fails when the baseline is missing", async () => {
    const dir = copyTree();
    rmSync(join(dir, "proto/baseline"), { recursive: true });
    mkdirSync(join(dir, "proto/baseline"));
    const result = await run(dir, CHECK);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain("npm run proto:baseline");
  });
});
