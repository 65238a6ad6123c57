import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCommandLine, UsageError } from "../../src/cli/args.js";
import { writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { freePort } from "../harness/caller-trace.js";

const METRICS_TOKEN = "metrics-token-0123456789abcdef0123";

/** The HTTP status of a GET, or the connection error's code when nothing listens there. */
async function statusOf(url: string, token?: string): Promise<number | string> {
  try {
    const res = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    await res.arrayBuffer();
    return res.status;
  } catch (err) {
    return ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code ?? String(err);
  }
}

describe("the metrics endpoint of a server bound to another address (--host 127.0.0.2)", () => {
  let server: AgentdProcess;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    const tokenFile = writeTokensFile([]);
    writeFileSync(tokenFile, `${METRICS_TOKEN}\n`);
    server = await startAgentd({
      args: ["--host", "127.0.0.2", "--metrics-port", String(port), "--metrics-token-file", tokenFile],
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("binds to 127.0.0.1 by default, not where the API binds", async () => {
    expect(await statusOf(`http://127.0.0.1:${port}/metrics`, METRICS_TOKEN)).toBe(200);
    expect(await statusOf(`http://127.0.0.2:${port}/metrics`, METRICS_TOKEN)).toBe("ECONNREFUSED");
    expect(server.listening.telemetry).toMatchObject({ prometheus: `http://127.0.0.1:${port}/metrics` });
  });

  it("answers 401 to a scrape without the --metrics-token-file token, or with another one", async () => {
    expect(await statusOf(`http://127.0.0.1:${port}/metrics`)).toBe(401);
    expect(await statusOf(`http://127.0.0.1:${port}/metrics`, `${METRICS_TOKEN}x`)).toBe(401);
  });

  it("serves Prometheus text to a scrape with the token, and never logs it", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(res.headers.get("content-type")).toContain("text/plain");
    expect(await res.text()).toMatch(/^# (HELP|TYPE) /m);
    expect(await server.settledLogs()).not.toContain(METRICS_TOKEN);
  });
});

describe("--metrics-host", () => {
  let server: AgentdProcess;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    server = await startAgentd({ args: ["--metrics-port", String(port), "--metrics-host", "127.0.0.3"] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("binds the metrics endpoint to the given interface, open without --metrics-token-file", async () => {
    expect(await statusOf(`http://127.0.0.3:${port}/metrics`)).toBe(200);
    expect(await statusOf(`http://127.0.0.1:${port}/metrics`)).toBe("ECONNREFUSED");
  });
});

describe("metrics flags", () => {
  it("refuses --metrics-host and --metrics-token-file without --metrics-port", () => {
    expect(() => parseCommandLine(["serve", "--metrics-host", "0.0.0.0"], {})).toThrow(UsageError);
    expect(() => parseCommandLine(["serve", "--metrics-token-file", "f"], {})).toThrow(
      /only apply with --metrics-port/,
    );
  });

  it("refuses to start with a metrics token shorter than 16 characters, without printing it", async () => {
    const file = writeTokensFile([]);
    writeFileSync(file, "short-secret\n");
    const err = await startAgentd({
      args: ["--metrics-port", String(await freePort()), "--metrics-token-file", file],
    }).then(
      () => new Error("agentd started"),
      (e: Error) => e,
    );
    expect(err.message).toContain("at least 16 characters");
    expect(err.message).not.toContain("short-secret");
  });
});
