// File stores written by the retired format-3 file store itself (FileSessionStore, before it was
// removed; the generator, test/fixtures/file-store/make-fixtures.ts, is in commit 94a83fd), kept as
// tarballs in test/fixtures/file-store/:
// - populated-1000.tar.gz: `populate(store, 1000)` of test/stores/copy-fixtures.ts;
// - edge.tar.gz: sessions e1 (labels, TTL, a record updated twice), e2 (deleted), e3 (owner acme,
//   in the tenant prefix directory acme/), e4 (its last batch only in a dead process's journal
//   segment, its lock naming that process), e5 (a torn batch after its last complete one and an
//   aborted journal batch), e6 (its last batch in the dead segment too, its lock released), and
//   three webhook events; edge-expected.json holds what the file store itself read back from it.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { SessionHead, SnapshotRecord } from "../../stores/snapshot-store.js";
import type { WebhookEvent } from "../../stores/webhook-outbox.js";
import { REPO_ROOT } from "./agentd-process.js";

const FIXTURES = join(REPO_ROOT, "test", "fixtures", "file-store");

/** Unpacks a file-store fixture (`populated-1000` or `edge`) into `dir` (created when missing). */
export function extractFileStore(name: "populated-1000" | "edge", dir: string): void {
  mkdirSync(dir, { recursive: true });
  execFileSync("tar", ["-xzf", join(FIXTURES, `${name}.tar.gz`), "-C", dir]);
}

/** What the file store read back from the edge fixture: per session its head and records (newest first), and the webhook events (newest first). */
export interface EdgeExpected {
  sessions: { head: SessionHead; records: SnapshotRecord[] }[];
  webhooks: WebhookEvent[];
}

/** The edge fixture's expected contents (edge-expected.json). */
export function edgeExpected(): EdgeExpected {
  return JSON.parse(readFileSync(join(FIXTURES, "edge-expected.json"), "utf8")) as EdgeExpected;
}
