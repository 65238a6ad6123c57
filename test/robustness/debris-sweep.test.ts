import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileSessionStore } from "../../stores/file-store.js";

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", ""]);
  return child.pid!;
}

describe("file store crash debris", () => {
  it("removes stale temp files and dead processes' locks when the store opens; keeps live ones", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-debris-"));
    new FileSessionStore(dir); // creates the layout marker
    const records = join(dir, "records");
    const sessions = join(dir, "sessions");
    const tenant = join(dir, "acme", "records");
    await mkdir(records, { recursive: true });
    await mkdir(sessions, { recursive: true });
    await mkdir(tenant, { recursive: true });
    const old = new Date(Date.now() - 10 * 60_000);
    const dead = deadPid();

    const staleTmp = join(records, ".0192aaaa-bbbb.json.a1b2c3d4e5f6.tmp");
    const staleHeadTmp = join(sessions, ".abc.head.json.0a0b0c0d0e0f.tmp");
    const tenantTmp = join(tenant, ".x.json.abcdefabcdef.tmp");
    for (const path of [staleTmp, staleHeadTmp, tenantTmp]) {
      await writeFile(path, "partial");
      await utimes(path, old, old);
    }
    const deadRecordLock = join(records, ".0192aaaa-bbbb.lock");
    const deadSessionLock = join(sessions, "abcdef.lock");
    const deadWant = join(sessions, "abcdef.lock.want");
    for (const path of [deadRecordLock, deadSessionLock, deadWant])
      await writeFile(path, JSON.stringify({ pid: dead, token: "t0" }));

    const freshTmp = join(records, ".0192cccc-dddd.json.0123456789ab.tmp");
    await writeFile(freshTmp, "being written");
    const liveLock = join(sessions, "fedcba.lock");
    await writeFile(liveLock, JSON.stringify({ pid: process.pid, token: "t1" }));
    await utimes(liveLock, old, old); // old, but its holder (this process) lives
    const record = join(records, "0192eeee-ffff.json");
    await writeFile(record, "{}");
    await utimes(record, old, old);

    const store = new FileSessionStore(dir);
    const swept = await store.debrisSwept;
    await store.close();

    for (const path of [staleTmp, staleHeadTmp, tenantTmp, deadRecordLock, deadSessionLock, deadWant])
      expect([path, existsSync(path)]).toEqual([path, false]);
    for (const path of [freshTmp, liveLock, record, join(dir, "agentd-store.json")])
      expect([path, existsSync(path)]).toEqual([path, true]);
    expect(swept).toEqual({ tmpFiles: 3, lockFiles: 3 });
  });
});
