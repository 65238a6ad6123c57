import { spawn } from "node:child_process";
import fs, { readlinkSync } from "node:fs";
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
import { afterEach, onTestFinished, vi, type Mock } from "vitest";
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

/** The FileHandle class's prototype (node:fs/promises does not export the class), reached through a probe file in `dir`. */
async function fileHandlePrototype(
  dir: string,
): Promise<Record<"sync" | "datasync", (this: { fd: number }) => Promise<void>>> {
  const probe = join(dir, ".sync-probe");
  const handle = await open(probe, "w");
  const prototype = Object.getPrototypeOf(handle) as Record<
    "sync" | "datasync",
    (this: { fd: number }) => Promise<void>
  >;
  await handle.close();
  await unlink(probe);
  return prototype;
}

/** The path a descriptor of this process refers to (Linux: /proc/self/fd). */
function pathOf(fd: number): string {
  return readlinkSync(`/proc/self/fd/${fd}`);
}

/**
 * Calls `seen(path, kind)` for every file and directory this process fsyncs, through a
 * `FileHandle` (`sync`, `datasync`) or a descriptor (`fs.fsync`, `fs.fdatasync`, as
 * `fsyncDescriptor` and `datasyncDescriptor` do), for the
 * rest of the current test; each fsync is still done.
 */
async function watchFileSyncs(dir: string, seen: (path: string, kind: "sync" | "datasync") => void): Promise<void> {
  const prototype = await fileHandlePrototype(dir);
  for (const method of ["sync", "datasync"] as const) {
    const original = prototype[method];
    const spy = vi.spyOn(prototype, method).mockImplementation(function (this: { fd: number }) {
      seen(pathOf(this.fd), method);
      return original.call(this);
    });
    onTestFinished(() => spy.mockRestore());
  }
  const fsync = fs.fsync;
  const spy = vi.spyOn(fs, "fsync").mockImplementation(((
    fd: number,
    callback: (err: NodeJS.ErrnoException | null) => void,
  ) => {
    seen(pathOf(fd), "sync");
    fsync(fd, callback);
  }) as typeof fs.fsync);
  onTestFinished(() => spy.mockRestore());
  const fdatasync = fs.fdatasync;
  const dataSpy = vi.spyOn(fs, "fdatasync").mockImplementation(((
    fd: number,
    callback: (err: NodeJS.ErrnoException | null) => void,
  ) => {
    seen(pathOf(fd), "datasync");
    fdatasync(fd, callback);
  }) as typeof fs.fdatasync);
  onTestFinished(() => dataSpy.mockRestore());
}

/**
 * A mock called once per fsync of any file or directory of this process (by `FileHandle.sync` or
 * `fs.fsync`; each still done) for the rest of the current test, with the synced path. `dir` is
 * where a probe file is opened (and removed) to reach the FileHandle class.
 */
export async function spyOnFileSyncs(dir: string): Promise<Mock<(path: string) => void>> {
  const seen = vi.fn<(path: string) => void>();
  await watchFileSyncs(dir, (path, kind) => {
    if (kind === "sync") seen(path);
  });
  return seen;
}

/** The paths fsynced during the rest of the current test, see {@link recordFileSyncs}. */
export interface FileSyncs {
  /** Paths of the files and directories fsynced (`FileHandle.sync`, `fs.fsync`), in call order. */
  synced: string[];
  /** Paths of the files `FileHandle.datasync` was called on, in call order. */
  datasynced: string[];
}

/**
 * Records the path of every file and directory this process fsyncs (`FileHandle.sync`,
 * `FileHandle.datasync` and `fs.fsync`, each still done) for the rest of the current test. `dir` as
 * for {@link spyOnFileSyncs}; paths are resolved from the descriptor (Linux: /proc/self/fd).
 */
export async function recordFileSyncs(dir: string): Promise<FileSyncs> {
  const syncs: FileSyncs = { synced: [], datasynced: [] };
  await watchFileSyncs(dir, (path, kind) => (kind === "sync" ? syncs.synced : syncs.datasynced).push(path));
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
