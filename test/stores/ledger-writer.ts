/**
 * A second process for the store conformance suite's cross-process tests:
 *
 *   node <typeScriptScriptArgs()> ledger-writer.ts '<SharedStoreDescriptor JSON>' '<WriterCommand JSON>'
 *
 * Opens the store, prints `ready`, waits for a `go` line on stdin, runs the
 * command, prints `{"result": …}` on one line, closes the store and exits 0
 * (non-zero with the error on stderr on failure). Started by
 * `startChildWriter` in `shared-store.ts`.
 */
import { createInterface } from "node:readline";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import { isChunkLog } from "../../stores/chunk-log.js";
import { chunks } from "./chunk-factory.js";
import { contendingWriter } from "./ledger-fixtures.js";
import { commitRecord, pendingRecord } from "./snapshot-factory.js";
import { openSharedStore, type SharedStoreDescriptor, type WriterCommand } from "./shared-store.js";

const [descriptorJson, commandJson] = process.argv.slice(2);
const descriptor = JSON.parse(descriptorJson!) as SharedStoreDescriptor;
const command = JSON.parse(commandJson!) as WriterCommand;

function waitForGo(): Promise<void> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: process.stdin });
    lines.on("line", (line) => {
      if (line.trim() === "go") {
        resolve();
        lines.close();
      }
    });
    lines.on("close", () => reject(new Error("stdin closed before go")));
  });
}

async function run(): Promise<unknown> {
  const store = await openSharedStore(descriptor);
  try {
    // Touch the store once so connections, directories and markers are set up before `ready`.
    await store.getHead("ledger-writer-warm-up");
    const go = waitForGo();
    process.stdout.write("ready\n");
    await go;
    switch (command.cmd) {
      case "writers":
        return await Promise.all(
          Array.from({ length: command.writers }, (_, i) =>
            contendingWriter(store, command.sessionId, `${command.tag}-w${i}`, command.turns, command.peerTag),
          ),
        );
      case "heartbeats": {
        const results = await Promise.all(
          Array.from({ length: command.count }, () =>
            store.updateRecord(command.snapshotId, (e) => ({ ...e, heartbeatAt: (e.heartbeatAt ?? 0) + 1 })),
          ),
        );
        return results.filter((r) => r !== null).length;
      }
      case "status": {
        const stored = await store.updateRecord(command.snapshotId, (e) => ({
          ...e,
          status: command.status as SnapshotStatus,
          updatedAt: Date.now(),
        }));
        return stored?.status ?? null;
      }
      case "pending": {
        const head = await commitRecord(store, undefined, pendingRecord(command.sessionId, command.snapshotId));
        return head.version;
      }
      case "chunks": {
        if (!isChunkLog(store)) throw new Error("the store keeps no chunk logs");
        const appended = chunks(command.from, command.to);
        await store.appendChunks(
          { sessionId: command.sessionId, snapshotId: command.snapshotId },
          appended,
          command.keepUntil,
        );
        return appended.length;
      }
      default:
        throw new Error(`unknown command ${JSON.stringify(command)}`);
    }
  } finally {
    await store.close?.();
  }
}

try {
  const result = await run();
  process.stdout.write(`${JSON.stringify({ result })}\n`, () => process.exit(0));
} catch (error) {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`, () =>
    process.exit(1),
  );
}
