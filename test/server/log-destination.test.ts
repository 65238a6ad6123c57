import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/agentd-process.js";
import { until } from "../harness/until.js";

const NODE = `${REPO_ROOT}node_modules/.bin/node`;

/** Starts test/fixtures/log-writer.ts and collects its stdout. */
function logWriter(mode: "exit" | "stay", count: number): { child: ChildProcess; output: () => string } {
  const child = spawn(NODE, ["--import", "tsx", "test/fixtures/log-writer.ts", mode, String(count)], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
  return { child, output: () => out };
}

const messages = (output: string): string[] =>
  output
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => (JSON.parse(l) as { msg: string }).msg);

describe("the CLI's log lines (coalesced writes on stdout)", () => {
  it("are all written, in order, when the process exits right after logging them", async () => {
    const { child, output } = logWriter("exit", 2000);
    const [code] = (await once(child, "close")) as [number | null]; // exited, and its stdout read to the end
    expect(code).toBe(0);
    expect(messages(output())).toEqual(Array.from({ length: 2000 }, (_, i) => `line ${i}`));
  });

  it("reach stdout while the process keeps running (written after a short delay, not held until exit)", async () => {
    const { child, output } = logWriter("stay", 3);
    try {
      const lines = await until("the three lines on stdout", () => messages(output()).length === 3 && output());
      expect(messages(lines)).toEqual(["line 0", "line 1", "line 2"]);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
