/**
 * `npm start` (the README's run command) is one server that stops with the
 * signal sent to npm: no tsx or node process is left serving the port.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/agentd-process.js";

/** Starts `npm start -- --port 0 --store memory:`; resolves with npm's process and the server's pid once it listens. */
async function npmStart(): Promise<{ npm: ReturnType<typeof spawn>; serverPid: number }> {
  const npm = spawn("npm", ["start", "--", "--port", "0", "--store", "memory:"], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const serverPid = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within 60 s:\n${out}`)), 60_000);
    npm.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n").find((l) => l.includes('"msg":"agentd listening"'));
      if (line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { pid: number }).pid);
      }
    });
    npm.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  });
  return { npm, serverPid };
}

/** True while a process with this pid exists (and is not a zombie waiting to be reaped). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return true;
}

async function gone(pid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (!running(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !running(pid);
}

describe("npm start", { timeout: 90_000 }, () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`stops the server when npm gets ${signal}`, async () => {
      const { npm, serverPid } = await npmStart();
      expect(serverPid).not.toBe(npm.pid);
      try {
        const exited = once(npm, "exit");
        npm.kill(signal);
        await exited;
        expect(await gone(serverPid, 15_000)).toBe(true);
      } finally {
        if (running(serverPid)) process.kill(serverPid, "SIGKILL");
      }
    });
  }
});
