import { spawn } from "node:child_process";
import fs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, onTestFinished } from "vitest";

// Fixtures of the stores' tests that touch the operating system: temporary directories and the
// pids of processes that have exited (reaped or not).

/**
 * A factory of fresh temporary directories (`mkdtemp` under the OS temp directory, named with
 * `prefix`), each removed after the test that created it. Call at the top level of a test file.
 */
export function useTempDirs(prefix: string): () => Promise<string> {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });
  return async () => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}

/** The pid of a process that has exited. */
export function deadPid(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", () => resolve(child.pid!));
  });
}

/**
 * The pid of a process that has exited but was not reaped (a zombie), as a SIGKILLed server whose
 * parent has not waited for it yet: `sh` starts a child, then becomes a `sleep` that never waits for
 * it. Resolves once `/proc` shows the child as a zombie; the `sleep` is killed (and the
 * zombie with it) when the test finishes. Linux only.
 */
export async function zombiePid(): Promise<number> {
  // The child exits only once its parent became `sleep`: a shell that outlived it might reap it.
  const child = "until grep -qx sleep /proc/$PPID/comm; do sleep 0.01; done";
  const parent = spawn("sh", ["-c", `sh -c '${child}' & echo $!; exec sleep 60`], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  onTestFinished(() => {
    parent.kill("SIGKILL");
  });
  const pid = await new Promise<number>((resolve, reject) => {
    parent.once("error", reject);
    parent.stdout.once("data", (data: Buffer) => resolve(Number(data.toString().trim())));
  });
  const state = () => {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.charAt(stat.lastIndexOf(")") + 2);
  };
  for (let waited = 0; state() !== "Z"; waited += 10) {
    if (waited > 10_000) throw new Error(`process ${pid} did not become a zombie`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return pid;
}
