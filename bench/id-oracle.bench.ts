// How long the ownership check of a snapshot ID takes on the SQLite store, for
// another tenant's snapshot and for an unknown ID: the "before" columns run
// the old order (read the record, then its session's head), "after" the
// runtime's `ownedRecord` (the owner checked before any record is read).
// Usage: npx tsx bench/id-oracle.bench.ts [rounds=5000]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ownedRecord } from "../src/runtime/sessions/session-lookup.js";
import { openSqlStore } from "../stores/sql/sql-store-uri.js";
import { newSnapshotId } from "../stores/snapshot-identity.js";
import type { SessionStore, StoreCallContext } from "../stores/snapshot-store.js";
import { checkpointRecord, commitOf, type CounterState } from "../test/stores/snapshot-factory.js";

const rounds = Number(process.argv[2] ?? 5000);
const dir = mkdtempSync(join(tmpdir(), "agentd-id-oracle-"));
const store = (await openSqlStore(`sqlite:${join(dir, "agentd.db")}`)) as unknown as SessionStore<CounterState>;
const foreign = newSnapshotId();
const state = { ...checkpointRecord("s-acme", foreign) };
// A realistic record: a few KB of conversation.
state.checkpoint = {
  ...state.checkpoint!,
  custom: { n: 1, items: Array.from({ length: 100 }, (_, i) => `item ${i} `.repeat(4)) },
};
const commit = commitOf(undefined, state);
await store.commit({ ...commit, head: { ...commit.head, owner: "acme" } });
const ctx: StoreCallContext = { tenant: "globex" };

/** The old check: record first, its head second. */
async function before(store: SessionStore<CounterState>, id: string): Promise<void> {
  const record = await store.getRecord(id, ctx);
  if (!record) return;
  const head = await store.getHead(record.sessionId, ctx);
  if (head?.owner !== "globex") return;
}
const after = (store: SessionStore<CounterState>, id: string): Promise<unknown> =>
  ownedRecord(store, "counter", id, ctx).catch(() => undefined);

async function median(check: (s: SessionStore<CounterState>, id: string) => Promise<unknown>, id: () => string) {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const value = id();
    const t = process.hrtime.bigint();
    await check(store, value);
    times.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

for (const [name, check] of [
  ["before", before],
  ["after", after],
] as const) {
  await median(check, () => foreign); // warm-up
  const f = await median(check, () => foreign);
  const u = await median(check, newSnapshotId);
  console.log(
    `${name.padEnd(6)} foreign ${f.toFixed(1)} µs  unknown ${u.toFixed(1)} µs  difference ${(f - u).toFixed(1)} µs (median of ${rounds})`,
  );
}
await store.close?.();
rmSync(dir, { recursive: true, force: true });
