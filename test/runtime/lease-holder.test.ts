import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { holderGone, leaseHolder, type LeaseHolder } from "../../src/runtime/sessions/lease-holder.js";
import { takeOverDeadWork } from "../../src/runtime/background/work-takeover.js";
import { DEFAULT_LIVENESS } from "../../src/runtime/sessions/snapshot-liveness.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { openSqlStore } from "../../stores/sql/sql-store-uri.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { claimOf, existingSession, patchHead } from "./claim-fixtures.js";

/** A process that runs until killed; `exited` resolves once it is gone (reaped). */
function sleeper(): { child: ChildProcess; exited: Promise<void> } {
  const child = spawn("sleep", ["60"], { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return { child, exited };
}

/** A holder on this machine with `pid`, from another process start than this one. */
function otherHolder(pid: number, instance = `other:${pid}`): LeaseHolder {
  return { ...leaseHolder().holder, instance, pid, incarnation: "another-incarnation" };
}

describe("holderGone: is a lease's holder provably dead?", () => {
  const self = leaseHolder();

  it("never for this process's own leases, nor for a lease that names no holder", () => {
    expect(holderGone(self.holder, self)).toBe(false);
    expect(holderGone(undefined, self)).toBe(false);
  });

  it("a process of this machine: alive while its pid runs, dead once it exited", async () => {
    const { child, exited } = sleeper();
    const holder = otherHolder(child.pid!);
    expect(holderGone(holder, self)).toBe(false);
    child.kill("SIGKILL");
    await exited;
    expect(holderGone(holder, self)).toBe(true);
  });

  it("an earlier incarnation of this instance: dead, even with this process's pid (a container restarted as pid 1)", () => {
    expect(holderGone({ ...self.holder, incarnation: "before-the-restart" }, self)).toBe(true);
  });

  it("another machine: unknown (the lease's expiry decides), unless it is this instance's --instance-id", () => {
    const elsewhere = { ...self.holder, machine: "another-host|boot|pid:[1]", incarnation: "x" };
    expect(holderGone({ ...elsewhere, instance: "someone-else" }, self)).toBe(false);
    // A default name (<hostname>:<pid>) only means something on its own machine.
    expect(holderGone(elsewhere, self)).toBe(false);
    const named = leaseHolder("agentd-0");
    expect(holderGone({ ...named.holder, machine: "another-host|boot|pid:[1]", incarnation: "x" }, named)).toBe(true);
  });
});

describe.each(["memory", "sqlite"] as const)("%s store: leases of a dead holder", (kind) => {
  let store: SessionStore;
  let dir: string | undefined;
  let dead: LeaseHolder;
  beforeAll(async () => {
    if (kind === "sqlite") {
      dir = await mkdtemp(join(tmpdir(), "agentd-lease-holder-"));
      store = await openSqlStore(`sqlite:${join(dir, "agentd.db")}`);
    } else store = new InMemorySessionStore();
    const { child, exited } = sleeper();
    dead = otherHolder(child.pid!);
    child.kill("SIGKILL");
    await exited;
  });
  afterAll(async () => {
    await store.close?.();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const deadLease = (holder: LeaseHolder) => ({
    invocationId: "killed-invocation",
    expiresAt: Date.now() + 3_600_000, // far from lapsing: only the holder's death frees the session
    holder,
  });

  it("a claim takes a session whose valid lease is held by a dead process (REJECT: not busy)", async () => {
    const { sessionId } = await existingSession(store);
    await patchHead(store, sessionId, { lease: deadLease(dead) });
    const claim = claimOf(store, sessionId);
    const head = await claim.acquire("reject");
    expect(head.lease?.invocationId).toBe(claim.invocationId);
    expect(head.lease?.holder).toEqual(leaseHolder().holder);
    await claim.release();
  });

  it("a claim is still refused by a live holder's lease", async () => {
    const { sessionId } = await existingSession(store);
    const live = otherHolder(process.ppid);
    await patchHead(store, sessionId, { lease: deadLease(live) });
    await expect(claimOf(store, sessionId).acquire("reject")).rejects.toMatchObject({ status: "ABORTED" });
  });

  it("a takeover pass drops a dead holder's lease at once, and keeps a live holder's", async () => {
    const gone = await existingSession(store);
    const alive = await existingSession(store);
    await patchHead(store, gone.sessionId, { lease: deadLease(dead) });
    await patchHead(store, alive.sessionId, { lease: deadLease(otherHolder(process.ppid)) });
    await takeOverDeadWork({
      stores: () => [store],
      agent: () => undefined,
      liveness: DEFAULT_LIVENESS,
      self: leaseHolder(),
    });
    expect((await store.getHead(gone.sessionId))?.lease).toBeUndefined();
    expect((await store.getHead(alive.sessionId))?.lease?.invocationId).toBe("killed-invocation");
  });
});
