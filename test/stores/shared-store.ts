/**
 * Stores that several processes can share, described so a child process can
 * open the same store (see `ledger-writer.ts`), and the parent side of that
 * child. No vitest imports: the child loads this file too.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SessionStore, SnapshotSubscriber } from "../../stores/snapshot-store.js";
import { typeScriptScriptArgs } from "../harness/typescript-script.js";
import type { CounterState } from "./snapshot-factory.js";

/**
 * How a second process opens the store under test (JSON-serializable).
 * - `mongodb`: `new MongoSessionStore({ uri, database, collectionPrefix, ...options })`;
 * - `sql`: `openSqlStore(uri)` (`sqlite:<file>` or `postgres://…?schema=…`).
 * `options` are extra constructor options (plain JSON) the test's own store was opened with.
 */
export type SharedStoreDescriptor =
  | { kind: "mongodb"; uri: string; database: string; collectionPrefix: string; options?: Record<string, unknown> }
  | { kind: "sql"; uri: string };

export type SharedStore = SessionStore<CounterState> & SnapshotSubscriber;

/**
 * Opens the store `descriptor` names. The store modules are imported only
 * when needed, so a memory-store test never loads the MongoDB driver.
 */
export async function openSharedStore(descriptor: SharedStoreDescriptor): Promise<SharedStore> {
  if (descriptor.kind === "mongodb") {
    const { MongoSessionStore } = (await import("../../stores/mongodb/mongo-store.js")) as unknown as {
      MongoSessionStore: new (config: Record<string, unknown>) => SharedStore;
    };
    const { uri, database, collectionPrefix, options } = descriptor;
    return new MongoSessionStore({ ...options, uri, database, collectionPrefix });
  }
  if (descriptor.kind === "sql") {
    const { openSqlStore } = await import("../../stores/sql/sql-store-uri.js");
    return (await openSqlStore(descriptor.uri)) as unknown as SharedStore;
  }
  throw new Error(`unknown shared store kind ${JSON.stringify((descriptor as { kind?: unknown }).kind)}`);
}

/** A command for the child writer (see `ledger-writer.ts`). */
export type WriterCommand =
  /** Runs `writers` contending writers of `turns` turns each on `sessionId` (interleaving with `peerTag`'s writers when given); result: `WriterAck[][]`. */
  | { cmd: "writers"; sessionId: string; tag: string; writers: number; turns: number; peerTag?: string }
  /** Increments `heartbeatAt` of `snapshotId` `count` times concurrently with updateRecord; result: number applied. */
  | { cmd: "heartbeats"; snapshotId: string; count: number }
  /** Rewrites the status of `snapshotId` with updateRecord; result: the stored status (or null). */
  | { cmd: "status"; snapshotId: string; status: string }
  /** Creates session `sessionId` with the pending record `snapshotId`; result: the new head's version (or null). */
  | { cmd: "pending"; sessionId: string; snapshotId: string }
  /** Appends `chunks(from, to)` (see chunk-factory.ts) to the log of `snapshotId` in `sessionId` in one call; result: how many. */
  | { cmd: "chunks"; sessionId: string; snapshotId: string; from: number; to: number; keepUntil: number };

/** A started child writer: it has opened the store and waits for {@link ChildWriter.go}. */
export interface ChildWriter<R> {
  /** Resolves once the child has opened the store and is waiting for `go`. */
  ready: Promise<void>;
  /** Lets the child start its command. */
  go(): void;
  /** The command's result (rejects when the child fails). */
  result: Promise<R>;
  /** Kills the child if it is still running. */
  kill(): void;
}

const WRITER_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "ledger-writer.ts");

/**
 * Spawns `ledger-writer.ts` in a new Node process on the store `descriptor`
 * names. The child opens the store, prints `ready`, waits for `go` on stdin
 * (so the caller can start its own writers at the same moment), runs
 * `command`, prints `{"result": …}` and exits.
 */
export function startChildWriter<R>(descriptor: SharedStoreDescriptor, command: WriterCommand): ChildWriter<R> {
  const child: ChildProcess = spawn(
    process.execPath,
    [...typeScriptScriptArgs(), WRITER_SCRIPT, JSON.stringify(descriptor), JSON.stringify(command)],
    {
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  let out = "";
  let err = "";
  let markReady: () => void = () => {};
  let failReady: (e: Error) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  child.stdout!.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    if (/^ready$/m.test(out)) markReady();
  });
  child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const result = new Promise<R>((resolve, reject) => {
    child.once("error", (e) => {
      failReady(e);
      reject(e);
    });
    child.once("exit", (code, signal) => {
      const line = out.split("\n").find((l) => l.startsWith('{"result"'));
      if (code === 0 && line) {
        resolve((JSON.parse(line) as { result: R }).result);
        return;
      }
      const e = new Error(`ledger writer exited with ${signal ?? code}: ${err || out}`);
      failReady(e);
      reject(e);
    });
  });
  result.catch(() => {}); // observed by the caller; avoid an unhandled rejection while it awaits `ready`
  ready.catch(() => {});
  return {
    ready,
    go: () => {
      child.stdin!.write("go\n");
      child.stdin!.end();
    },
    result,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill();
    },
  };
}

/**
 * The descriptor `crossProcess` a shared store's factory gave (what a second
 * process needs to open the store); throws naming the store `name` when it
 * gave none, so a cross-process test fails instead of running in one process.
 */
export function crossProcessOf(name: string, crossProcess: SharedStoreDescriptor | undefined): SharedStoreDescriptor {
  if (!crossProcess)
    throw new Error(`${name}: sharedAcrossProcesses is set but the factory gave no crossProcess descriptor`);
  return crossProcess;
}

/** Runs `command` in a child writer to its end (let go as soon as it is ready) and resolves to its result. */
export async function runChildWriter<R>(descriptor: SharedStoreDescriptor, command: WriterCommand): Promise<R> {
  const child = startChildWriter<R>(descriptor, command);
  await child.ready;
  child.go();
  return child.result;
}
