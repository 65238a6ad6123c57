import { spawn } from "node:child_process";
import { describe, expect, it, onTestFinished } from "vitest";
import { processAlive } from "../../stores/process-liveness.js";
import { deadPid, zombiePid } from "./os-fixtures.js";

// Whether a process still runs (stores/process-liveness.ts): what a lease holder's death and the
// file-store reader's refusal of a store a live process still writes decide on.

describe("processAlive", () => {
  it("is true for a running process", () => {
    const child = spawn("sleep", ["60"], { stdio: "ignore" });
    onTestFinished(() => {
      child.kill("SIGKILL");
    });
    expect(processAlive(child.pid!)).toBe(true);
  });

  it("is true for this process", () => {
    expect(processAlive(process.pid)).toBe(true);
  });

  it("is false for a process that exited and was reaped", async () => {
    expect(processAlive(await deadPid())).toBe(false);
  });

  it("is false for a process that exited but its parent has not reaped (a zombie)", async () => {
    const pid = await zombiePid();
    expect(() => process.kill(pid, 0)).not.toThrow(); // the kernel still knows the pid
    expect(processAlive(pid)).toBe(false);
  });
});
