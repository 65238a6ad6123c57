import { randomUUID } from "node:crypto";
import { readFileSync, readlinkSync } from "node:fs";
import { hostname } from "node:os";
import type { LeaseHolder } from "../../../stores/snapshot-store.js";
import { processAlive } from "../../../stores/process-liveness.js";
import { defaultInstanceId } from "../background/instance-id.js";

export type { LeaseHolder } from "../../../stores/snapshot-store.js";

/** This process, as written into the leases it takes (see {@link leaseHolder}). */
export interface LeaseSelf {
  holder: LeaseHolder;
  /**
   * The instance name was given (`--instance-id`), so it names one instance
   * wherever it runs: a lease of another incarnation under that name is a
   * previous life of this instance, even from another machine. A default name
   * (`<hostname>:<pid>`) counts only on the same machine.
   */
  named: boolean;
}

/** New at every process start: tells a restarted instance from its predecessor. */
const INCARNATION = randomUUID();

/** Reads a small system file, or "" when it cannot (not Linux, no /proc). */
function systemText(read: () => string): string {
  try {
    return read().trim();
  } catch {
    return "";
  }
}

/**
 * The host and process namespace of this process: hostname, kernel boot ID
 * and PID namespace (Linux). Processes with the same value see the same
 * pids, so a pid of a lease holder with this value can be checked here.
 */
const MACHINE = [
  hostname(),
  systemText(() => readFileSync("/proc/sys/kernel/random/boot_id", "utf8")),
  systemText(() => readlinkSync("/proc/self/ns/pid")),
].join("|");

/**
 * This process as a lease holder: `instance` (default `<hostname>:<pid>`,
 * which then counts only on this machine), machine, pid and incarnation.
 */
export function leaseHolder(instance?: string): LeaseSelf {
  return {
    holder: { instance: instance ?? defaultInstanceId(), machine: MACHINE, pid: process.pid, incarnation: INCARNATION },
    named: instance !== undefined,
  };
}

/**
 * True when `holder` is provably not running any more, judged by `self`
 * (this process): it is an earlier incarnation of this very instance (the
 * same `--instance-id`, or the same default name on this machine, as after
 * a container restart where the pid is 1 again), or it ran on this machine
 * and its pid is gone. False when unknown (another machine, no holder
 * recorded, a pid still in use): then only the lease's expiry frees the
 * session. Never true for a lease of this process.
 */
export function holderGone(holder: LeaseHolder | undefined, self: LeaseSelf): boolean {
  if (!holder || typeof holder !== "object") return false;
  const me = self.holder;
  if (holder.incarnation === me.incarnation) return false;
  const sameMachine = holder.machine === me.machine;
  if (holder.instance === me.instance && (self.named || sameMachine)) return true;
  if (!sameMachine || !Number.isSafeInteger(holder.pid) || holder.pid <= 0) return false;
  return holder.pid === process.pid || !processAlive(holder.pid);
}
