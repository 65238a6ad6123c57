import { spawn } from "node:child_process";
import { readlinkSync } from "node:fs";
import {
  mkdtemp,
  open,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  unlink,
  utimes,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, onTestFinished, vi, type MockInstance } from "vitest";
import { FileSessionStore, type FileSessionStoreOptions } from "../../stores/file-store.js";
import type { CounterState } from "./snapshot-factory.js";

// Fixtures of the file store's unit tests (stores/file/*): temporary directories, lock files of
// dead processes, aged files and open file descriptors.

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

/** Sets the file's modification time `ms` into the past (how a file ages without waiting for it). */
export async function age(path: string, ms: number): Promise<void> {
  const then = new Date(Date.now() - ms);
  await utimes(path, then, then);
}

/** The files under `dir` this process holds open (Linux: read from /proc/self/fd). */
export async function openFilesUnder(dir: string): Promise<string[]> {
  const open: string[] = [];
  for (const fd of await readdir("/proc/self/fd")) {
    const target = await readlink(join("/proc/self/fd", fd)).catch(() => "");
    if (target.startsWith(`${dir}/`)) open.push(target);
  }
  return open;
}

/**
 * A spy on the fsync (`FileHandle.sync`) of every file and directory handle of this process, for
 * the rest of the current test (restored when it finishes). `dir` is where a probe file is opened
 * (and removed) to reach the FileHandle class, which node:fs/promises does not export.
 */
export async function spyOnFileSyncs(dir: string): Promise<MockInstance<() => Promise<void>>> {
  const probe = join(dir, ".sync-probe");
  const handle = await open(probe, "w");
  const prototype = Object.getPrototypeOf(handle) as { sync: () => Promise<void> };
  await handle.close();
  await unlink(probe);
  const spy = vi.spyOn(prototype, "sync");
  onTestFinished(() => spy.mockRestore());
  return spy;
}

/** The paths fsynced during the rest of the current test, see {@link recordFileSyncs}. */
export interface FileSyncs {
  /** Paths of the files and directories `FileHandle.sync` was called on, in call order. */
  synced: string[];
  /** Paths of the files `FileHandle.datasync` was called on, in call order. */
  datasynced: string[];
}

/**
 * Records the path of every file and directory this process fsyncs (`FileHandle.sync` and
 * `FileHandle.datasync`, each still done) for the rest of the current test. `dir` as for
 * {@link spyOnFileSyncs}; paths are resolved from the handle's descriptor (Linux: /proc/self/fd).
 */
export async function recordFileSyncs(dir: string): Promise<FileSyncs> {
  const probe = join(dir, ".sync-probe");
  const handle = await open(probe, "w");
  const prototype = Object.getPrototypeOf(handle) as Record<
    "sync" | "datasync",
    (this: { fd: number }) => Promise<void>
  >;
  await handle.close();
  await unlink(probe);
  const syncs: FileSyncs = { synced: [], datasynced: [] };
  for (const [method, into] of [
    ["sync", syncs.synced],
    ["datasync", syncs.datasynced],
  ] as const) {
    const original = prototype[method];
    const spy = vi.spyOn(prototype, method).mockImplementation(function (this: { fd: number }) {
      into.push(readlinkSync(`/proc/self/fd/${this.fd}`));
      return original.call(this);
    });
    onTestFinished(() => spy.mockRestore());
  }
  return syncs;
}

/** How many OS (inotify) watches this process holds on the directory `dir` (Linux: /proc/self/fdinfo). */
export async function osWatchesOn(dir: string): Promise<number> {
  const ino = (await stat(dir)).ino.toString(16);
  let watches = 0;
  for (const fd of await readdir("/proc/self/fd")) {
    if ((await readlink(join("/proc/self/fd", fd)).catch(() => "")) !== "anon_inode:inotify") continue;
    const info = await readFile(join("/proc/self/fdinfo", fd), "utf8").catch(() => "");
    watches += info.split("\n").filter((line) => line.startsWith("inotify ") && line.includes(` ino:${ino} `)).length;
  }
  return watches;
}

/** Replaces `path` with a symbolic link that points at itself (every open or stat through it then fails with ELOOP). */
export async function selfLink(path: string): Promise<void> {
  const tmp = `${path}.link`;
  await symlink(basename(path), tmp);
  await rename(tmp, path);
}

/** Opens file stores that are closed after each test: `open(dir, options)`. */
export function useFileStores(): (dir: string, options?: FileSessionStoreOptions) => FileSessionStore<CounterState> {
  const stores: FileSessionStore<CounterState>[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });
  return (dir, options = {}) => {
    const store = new FileSessionStore<CounterState>(dir, options);
    stores.push(store);
    return store;
  };
}
