/**
 * examples/go-quickstart, the complete Go program the README points to, runs
 * as written (`go run .` in its own module) against a real server and exits 0.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

const exec = promisify(execFile);

describe("examples/go-quickstart", () => {
  let server: AgentdProcess;

  beforeAll(async () => {
    server = await startAgentd({ args: ["--store", "memory:"] });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
  });

  it(
    "converses, resumes and runs background work against npm start's example agents",
    { timeout: 300_000 },
    async () => {
      const { stdout } = await exec("go", ["run", "."], {
        cwd: join(REPO_ROOT, "examples/go-quickstart"),
        env: { ...process.env, AGENTD_URL: server.url, GOWORK: "off" },
        timeout: 280_000,
      });
      const lines = stdout.trim().split("\n");
      expect(lines[0]).toBe("echo: hello");
      expect(lines[1]).toMatch(/^turn 1 of session [0-9a-f-]{36}$/);
      expect(lines[2]).toBe("resumed: the session has 6 messages");
      expect(lines.at(-2)).toBe("background: SNAPSHOT_STATUS_COMPLETED");
      expect(lines.at(-1)).toBe("background result: SNAPSHOT_STATUS_COMPLETED FINISH_REASON_STOP");
    },
  );
});
