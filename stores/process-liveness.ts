import { readFileSync } from "node:fs";

/**
 * True while a process with this pid runs (or runs under another user).
 * A process that exited but was not reaped yet (a zombie: its parent has not
 * waited for it) counts as gone: it holds nothing any more, and in a container
 * whose init does not reap promptly a SIGKILLed agentd stays a zombie for a
 * while, or for good. On Linux the zombie state is read from
 * `/proc/<pid>/stat`; elsewhere, or when that file cannot be read, the answer
 * of `kill(pid, 0)` stands.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  return !isZombie(pid);
}

/** True when `/proc/<pid>/stat` shows the process exited (state Z, zombie, or X, dead); false when unknown. */
function isZombie(pid: number): boolean {
  if (process.platform !== "linux") return false;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return false; // no /proc here, or the process was reaped meanwhile (the next check sees it gone)
  }
  // "pid (comm) S ...": the command name may hold spaces and parentheses, the state follows the last ")".
  const state = stat.charAt(stat.lastIndexOf(")") + 2);
  return state === "Z" || state === "X";
}
