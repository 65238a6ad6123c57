import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT, runAgentdBin } from "../harness/agentd-process.js";
import { closestFlag } from "../../src/cli/flag-suggestion.js";
import { parseCommandLine, UsageError } from "../../src/cli/args.js";
import { checkWebhookAddress } from "../../src/cli/webhook-address-check.js";

/** Runs bin/agentd.js (as a user does) to completion. */
function agentd(args: string[], cwd = REPO_ROOT): Promise<{ code: number; stderr: string }> {
  return runAgentdBin(args, { cwd, timeoutMs: 60_000 });
}

async function moduleFile(name: string, source: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "agentd-startup-"));
  const path = join(dir, name);
  await writeFile(path, source);
  return path;
}

describe("start-up errors keep the point", () => {
  it("a syntax error in a TypeScript agents module names file, line, column and the reason", async () => {
    const path = await moduleFile("agents.ts", 'export const agent = {\n  name: "x",,\n};\n');
    const result = await agentd(["serve", path, "--port", "0", "--store", "memory:"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('agents.ts:2:12: Expected identifier but found ","');
    expect(result.stderr).not.toContain("Transform failed");
  });

  it("a syntax error in a JavaScript agents module names file, line, column and the reason", async () => {
    const path = await moduleFile("agents.mjs", "export const agent = 1;\nconst x = {,};\n");
    const result = await agentd(["serve", path, "--port", "0", "--store", "memory:"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("agents.mjs:2:12: Unexpected token ','");
  });

  it("a module that throws while loading keeps its message", async () => {
    const path = await moduleFile("agents.mjs", 'throw new Error("no API key in this environment");\n');
    const result = await agentd(["serve", path, "--port", "0", "--store", "memory:"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("failed to load: no API key in this environment");
  });

  it("a mistyped flag names the flag the user meant", async () => {
    const result = await agentd(["serve", "--prot", "8080"]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe("agentd: unknown flag --prot; did you mean --port? (see agentd --help)");
  });

  it("a mistyped flag of init names the flag the user meant", async () => {
    const result = await agentd(["init", "--agentd-versoin", "1.0.0"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown flag --agentd-versoin; did you mean --agentd-version?");
  });
});

describe("flag suggestions", () => {
  it.each([
    ["--prot", "port"],
    ["--stroe", "store"],
    ["--log-levle", "log-level"],
    ["--webhok-url=http://x", "webhook-url"],
    ["--max-conections", "max-connections"],
  ])("%s suggests --%s", (given, expected) => {
    expect(() => parseCommandLine(["serve", given])).toThrow(`did you mean --${expected}?`);
  });

  it("suggests nothing for a flag unlike any other", () => {
    expect(closestFlag("--zzzzzzzz", ["port", "store"])).toBeUndefined();
    expect(() => parseCommandLine(["serve", "--zzzzzzzz"])).toThrow(UsageError);
    expect(() => parseCommandLine(["serve", "--zzzzzzzz"])).not.toThrow("did you mean");
  });

  it("a flag without its value says so, without Node's advice about positionals", () => {
    expect(() => parseCommandLine(["serve", "--port"])).toThrow("--port needs a value (see agentd --help)");
    expect(() => parseCommandLine(["serve", "--otel=yes"])).toThrow("--otel takes no value");
  });
});

describe("a webhook configuration that cannot work is refused at start", () => {
  it.each([
    "http://127.0.0.1:8080/hook",
    "http://localhost:8080/hook",
    "http://[::1]:8080/hook",
    "http://10.1.2.3/hook",
  ])("%s without --webhook-allow-private exits 2 naming the flag", async (url) => {
    const secret = await moduleFile("secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n");
    const result = await agentd([
      "serve",
      "--port",
      "0",
      "--store",
      "memory:",
      "--webhook-url",
      url,
      "--webhook-secret-file",
      secret,
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--webhook-allow-private");
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
  });
});

describe("checkWebhookAddress (the start-up DNS check)", () => {
  const config = (url: string, allowPrivate = false) => ({ url, secretFile: "unused", allowPrivate });

  it("refuses a host that resolves only to loopback, naming the flag", async () => {
    await expect(checkWebhookAddress(config("http://localhost:1/hook"))).rejects.toThrow(
      /localhost resolves only to private or loopback addresses \(.*127\.0\.0\.1.*\).*--webhook-allow-private/,
    );
  });

  it("lets it through with --webhook-allow-private", async () => {
    await expect(checkWebhookAddress(config("http://localhost:1/hook", true))).resolves.toBeUndefined();
  });

  it("lets through a host that does not resolve now (deliveries are retried)", async () => {
    await expect(checkWebhookAddress(config("http://no-such-host.invalid/hook"))).resolves.toBeUndefined();
  });
});
