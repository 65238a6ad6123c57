/**
 * The packed tarball installed with its peer dependencies (a server user's
 * plain `npm install`) into a fresh project: `npx agentd serve` serves a user
 * agents module written in plain JavaScript (and, with the tsx peer, one in
 * TypeScript), and the `@agentd-dev/agentd/server`, `@agentd-dev/agentd/stores/mongodb` entries load.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, installedPackages, NODE, npmInstall, packAgentd, run, tempProject } from "./npm-package.js";

const AGENTS_MJS = `
import { defineCustomAgent, generateModelTurn } from "@agentd-dev/agentd";

/** Counts the user's messages in custom state and answers with the offline echo model. */
export const counter = defineCustomAgent({
  name: "counter",
  store: "default",
  turn: async (_input, ctx) => {
    ctx.session.updateCustom((s) => ({ count: (s?.count ?? 0) + 1 }));
    return generateModelTurn(ctx, "echo");
  },
});
`;

const AGENTS_TS = `
import { defineCustomAgent, generateModelTurn, type Agent } from "@agentd-dev/agentd";
interface Notes { notes: string[] }
export const notes: Agent<Notes> = defineCustomAgent<Notes>({
  name: "notes",
  store: "default",
  turn: (_input, ctx) => generateModelTurn(ctx, "echo"),
});
`;

/**
 * A TypeScript agents module in a CommonJS package (what `npm init -y` makes): tsx compiles it
 * to CommonJS, so its `require("@agentd-dev/agentd")` may load a second copy of agentd next to the CLI's.
 * The README's `authenticate` and a turn throw AgentError; a prompt model has no key.
 */
const GUARDED_AGENTS_TS = `
import { AgentError, defineCustomAgent, generateModelTurn, type Authenticate } from "@agentd-dev/agentd";

export const authenticate: Authenticate = async ({ headers }) => {
  const key = headers.get("x-api-key");
  if (key === null) return null;
  if (key === "revoked") throw new AgentError("PERMISSION_DENIED", "this API key was revoked");
  return { subject: "user-1", tenant: "acme" };
};

export const refuser = defineCustomAgent({
  name: "refuser",
  store: "default",
  turn: async () => {
    throw new AgentError("PERMISSION_DENIED", "this account may not use refuser");
  },
});

export const keyless = defineCustomAgent({
  name: "keyless",
  store: "default",
  turn: (_input, ctx) => generateModelTurn(ctx, "openai/gpt-4o-mini"),
});
`;

interface Served {
  child: ChildProcess;
  url: string;
  listening: Record<string, unknown>;
}

/**
 * `npx agentd serve ...args` in `cwd`, in a process group of its own (npx does not pass a
 * SIGTERM on to the server it started, see {@link stop}); resolves at its listening line.
 */
async function serve(cwd: string, args: readonly string[]): Promise<Served> {
  const child = spawn("npx", ["--no-install", "agentd", "serve", ...args], {
    cwd,
    env: cleanEnv(),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within 60 s:\n${out}`)), 60_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n").find((l) => l.includes('"msg":"agentd listening"'));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line) as Record<string, unknown>);
      }
    });
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`agentd exited ${code}:\n${out}`));
    });
  });
  return { child, url: (listening.url as string) ?? `http://127.0.0.1:${listening.port as number}`, listening };
}

/** Stops npx and the agentd server under it: SIGTERM to the whole process group. */
async function stop(served: Served | undefined): Promise<void> {
  if (!served || served.child.exitCode !== null) return;
  const exited = once(served.child, "exit");
  process.kill(-served.child.pid!, "SIGTERM");
  await exited;
}

/** A unary Run over Connect JSON with extra headers; resolves to the HTTP status and the JSON body. */
async function post(
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${url}/agentd.v1.AgentService/Run`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** A unary Run over Connect JSON. */
async function runTurn(
  url: string,
  body: unknown,
): Promise<{ output: { sessionId: string; message: { content: { text?: string }[] } } }> {
  const res = await fetch(`${url}/agentd.v1.AgentService/Run`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as never;
  if (!res.ok) throw new Error(`Run: HTTP ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/**
 * Serves GUARDED_AGENTS_TS from `app` with the installed `npx agentd serve` and checks that
 * its AgentErrors keep their codes: authenticate's PERMISSION_DENIED, a turn's (in-band), and a
 * missing provider key's FAILED_PRECONDITION naming the variable.
 */
async function expectGuardedCodes(app: string): Promise<void> {
  const guarded = await serve(app, ["./guarded-agents.ts", "--port", "0", "--store", "memory:"]);
  try {
    const input = { message: { role: "ROLE_USER", content: [{ text: "hi" }] } };
    const denied = await post(guarded.url, { init: { agent: "refuser" }, input }, { "x-api-key": "revoked" });
    expect(denied.status).toBe(403);
    expect(denied.json).toMatchObject({ code: "permission_denied", message: "this API key was revoked" });

    const refused = await post(guarded.url, { init: { agent: "refuser" }, input }, { "x-api-key": "ok" });
    expect(refused.status).toBe(200);
    expect(refused.json).toMatchObject({
      output: {
        finishReason: "FINISH_REASON_FAILED",
        error: { status: "PERMISSION_DENIED", message: "this account may not use refuser" },
      },
    });

    const keyless = await post(guarded.url, { init: { agent: "keyless" }, input }, { "x-api-key": "ok" });
    expect(keyless.status).toBe(200);
    expect(keyless.json).toMatchObject({
      output: { finishReason: "FINISH_REASON_FAILED", error: { status: "FAILED_PRECONDITION" } },
    });
    expect(JSON.stringify(keyless.json)).toContain("OPENAI_API_KEY");
  } finally {
    await stop(guarded);
  }
}

describe("the packed agentd installed with its peers", { timeout: 180_000 }, () => {
  let work: string;
  let project: string;
  let served: Served | undefined;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "agentd-pack-server-"));
    const tarball = await packAgentd(work);
    project = await tempProject("server-user");
    await npmInstall(project, [tarball]);
    await writeFile(join(project, "agents.mjs"), AGENTS_MJS);
    await writeFile(join(project, "more-agents.ts"), AGENTS_TS);
  }, 180_000);

  afterAll(async () => {
    await stop(served);
    if (work) await rm(work, { recursive: true, force: true });
    if (project) await rm(project, { recursive: true, force: true });
  });

  it("installs the server-side peers, and not the project's Node", async () => {
    const packages = await installedPackages(project);
    console.log(`server install (with peers): ${packages.length} packages`);
    for (const name of ["@agentd-dev/agentd", "ai", "pino", "mongodb", "tsx", "zod"])
      expect(packages, name).toContain(name);
    expect(packages).not.toContain("node");
    expect(packages).not.toContain("typescript");
    const { stdout } = await run("npx", ["--no-install", "agentd", "--version"], { cwd: project });
    expect(stdout.trim()).toBe("0.1.0");
  });

  it("serves a plain-JavaScript agents module (and a TypeScript one through tsx) with npx agentd serve", async () => {
    served = await serve(project, ["./agents.mjs", "./more-agents.ts", "--port", "0", "--store", "memory:"]);
    expect(served.listening.agents).toEqual(expect.arrayContaining(["counter", "notes"]));
    const first = await runTurn(served.url, {
      init: { agent: "counter" },
      input: { message: { role: "ROLE_USER", content: [{ text: "one" }] } },
    });
    expect(first.output.message.content.map((p) => p.text).join("")).toBe("echo: one");
    const second = await runTurn(served.url, {
      init: { agent: "counter", sessionId: first.output.sessionId },
      input: { message: { role: "ROLE_USER", content: [{ text: "two" }] } },
    });
    expect(second.output.sessionId).toBe(first.output.sessionId);
    const snapshot = await fetch(`${served.url}/agentd.v1.AgentService/GetSnapshot`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent: "counter", sessionId: first.output.sessionId }),
    }).then((r) => r.json() as Promise<{ snapshot: { state: { custom: unknown } } }>);
    expect(JSON.stringify(snapshot)).toContain('"count":2');
    const notes = await runTurn(served.url, {
      init: { agent: "notes" },
      input: { message: { role: "ROLE_USER", content: [{ text: "note" }] } },
    });
    expect(notes.output.message.content[0]?.text).toBe("echo: note");
  });

  for (const kind of ["CommonJS", "ESM"] as const) {
    it(`keeps AgentError codes thrown by a TypeScript agents module of ${kind === "ESM" ? "an ESM" : "a CommonJS"} package`, async () => {
      const app = join(project, `${kind.toLowerCase()}-app`);
      await mkdir(app);
      const manifest = {
        name: `${kind.toLowerCase()}-app`,
        version: "1.0.0",
        ...(kind === "ESM" ? { type: "module" } : {}),
      };
      await writeFile(join(app, "package.json"), JSON.stringify(manifest));
      await writeFile(join(app, "guarded-agents.ts"), GUARDED_AGENTS_TS);
      await expectGuardedCodes(app);
    });
  }

  it("serves the inspector's built files from dist/inspector with npx agentd serve --inspector", async () => {
    const inspecting = await serve(project, ["./agents.mjs", "--inspector", "--port", "0", "--store", "memory:"]);
    try {
      expect(inspecting.listening.inspector).toBe(`${inspecting.url}/inspector/`);
      const page = await fetch(`${inspecting.url}/inspector/sessions/any`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(await page.text()).toContain('src="/inspector/assets/inspector.js"');
      const bundle = await fetch(`${inspecting.url}/inspector/assets/inspector.js`);
      expect(bundle.status).toBe(200);
      expect((await bundle.arrayBuffer()).byteLength).toBeGreaterThan(10_000);
    } finally {
      await stop(inspecting);
    }
  });

  it("exports the server, the MongoDB store and the stores by package name", async () => {
    const script = [
      `const server = await import("@agentd-dev/agentd/server");`,
      `const mongo = await import("@agentd-dev/agentd/stores/mongodb");`,
      `const stores = await import("@agentd-dev/agentd/stores");`,
      `const root = await import("@agentd-dev/agentd");`,
      `console.log(JSON.stringify([typeof server.startServer, typeof server.agentServiceRoutes, typeof server.StaticTokens, typeof server.jwtBearerAuthenticator,`,
      `  typeof server.startServe, typeof mongo.MongoSessionStore, typeof stores.FileStoreArchive, typeof root.AgentRegistry]));`,
    ].join("\n");
    const { stdout } = await run(NODE, ["--input-type=module", "-e", script], { cwd: project, timeoutMs: 60_000 });
    expect(JSON.parse(stdout.trim())).toEqual(Array(8).fill("function"));
  });
});
