/**
 * A second process for the file store's cross-process tests:
 * `tsx file-store-writer.ts <dir> <snapshotId> status <status>` rewrites the
 * row's status; `... increment <n>` increments `state.custom.n` n times
 * (concurrently within this process).
 */
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import { FileSessionStore } from "../../stores/file-store.js";
import type { CounterState } from "./snapshot-factory.js";

const [dir, snapshotId, command, arg] = process.argv.slice(2);
const store = new FileSessionStore<CounterState>(dir!);
if (command === "status") {
  await store.saveSnapshot(snapshotId, (e) => (e ? { ...e, status: arg as SnapshotStatus, updatedAt: Date.now() } : null));
} else if (command === "increment") {
  await Promise.all(
    Array.from({ length: Number(arg) }, () =>
      store.saveSnapshot(snapshotId, (e) => (e ? { ...e, state: { ...e.state!, custom: { n: e.state!.custom!.n + 1 } } } : null)),
    ),
  );
} else {
  throw new Error(`unknown command ${command}`);
}
