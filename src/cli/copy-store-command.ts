import { resolve } from "node:path";
import { parseArgs } from "node:util";
import type { CopySource } from "../../stores/copy/copy-source.js";
import { copyStore, type StoreCopyReport } from "../../stores/copy/copy-store.js";
import type { SessionCopy } from "../../stores/copy/copy-session.js";
import { retiredFileStoreMessage } from "./retired-file-store.js";
import { fileStoreUriPath, isFileStoreUri } from "../../stores/file-store-uri.js";
import { FileStoreArchive } from "../../stores/file-archive/file-store-archive.js";
import { redactStoreUri } from "../../stores/redact-uri.js";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import type { SessionStore } from "../../stores/snapshot-store.js";

/** Usage of `agentd copy-store`. */
export const COPY_STORE_USAGE = `Usage: agentd copy-store <from-uri> <to-uri> [--concurrency <n>]

Copies every session of one store into another: each session's head (agent, owner, labels, TTL,
lease), every snapshot record of every branch (IDs, parent links, turn indexes, timestamps,
status, state) and the webhook outbox's events. Store URIs as for --store: sqlite:<file>,
postgres://host/db, mongodb://host/db[?collectionPrefix=p], and any other store this agentd opens;
the source may also be a retired file store, file:<dir> (store format 3 or 2; it is only read,
never the destination). Stop every agentd using either store first.

Each session is verified after its copy (record count and SHA-256 of the session, read back from
the destination) and printed with both. A re-run after an interruption skips the sessions already
copied and completes the others without duplicates. Exits 0 when every session verified, 1 when
one did not (each named on stderr), 2 for a usage error or a store it cannot open.

  --concurrency <n>   sessions copied at the same time (default 4)
`;

/** Opens the source: a `file:` directory is read by the retired file store's reader (NOT_FOUND when it holds no store). */
async function openSource(uri: string): Promise<CopySource> {
  if (isFileStoreUri(uri)) return FileStoreArchive.open(resolve(process.cwd(), fileStoreUriPath(uri)));
  return openStoreFromUri(uri);
}

/** One line per session: what happened, its record count and checksum. */
function sessionLine(copy: SessionCopy): string {
  return `${copy.outcome.padEnd(9)} ${copy.sessionId}  records=${copy.records}  sha256=${copy.checksum}\n`;
}

function summary(report: StoreCopyReport): string {
  const hooks = report.webhooks
    ? `; ${report.webhooks.events} webhook events (${report.webhooks.pending} pending, ${report.webhooks.written} written)`
    : "";
  return (
    `${report.sessions} sessions (${report.copied} copied, ${report.completed} completed, ${report.unchanged} unchanged, ` +
    `${report.failures.length} failed), ${report.records} records verified (${report.written} written)${hooks}`
  );
}

/**
 * `agentd copy-store <from> <to>`: copies and verifies every session and
 * webhook event (see `copyStore`), printing one line per session on stdout
 * (outcome, ID, record count, SHA-256) and a summary. Resolves to the exit
 * code: 0 when everything verified, 1 when a session or the outbox did not
 * (each failure on stderr, naming the session), 2 (one line on stderr) for a
 * usage error or a store it cannot open.
 */
export async function copyStoreCommand(args: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: { concurrency: { type: "string" }, help: { type: "boolean", short: "h" } },
    });
  } catch (err) {
    process.stderr.write(`agentd: copy-store: ${(err as Error).message.split("\n")[0]}\n${COPY_STORE_USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(COPY_STORE_USAGE);
    return 0;
  }
  const [fromUri, toUri] = parsed.positionals;
  if (parsed.positionals.length !== 2 || !fromUri!.trim() || !toUri!.trim()) {
    process.stderr.write(`agentd: copy-store takes a source and a destination store URI\n${COPY_STORE_USAGE}`);
    return 2;
  }
  const concurrency = parsed.values.concurrency === undefined ? 4 : Number(parsed.values.concurrency);
  if (!Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > 64) {
    process.stderr.write(`agentd: copy-store: --concurrency must be an integer from 1 to 64\n`);
    return 2;
  }
  if (isFileStoreUri(toUri!)) {
    process.stderr.write(`agentd: copy-store: ${retiredFileStoreMessage("the destination", toUri!, fromUri!)}\n`);
    return 2;
  }
  if (fromUri!.trim() === toUri!.trim()) {
    process.stderr.write(`agentd: copy-store: the source and the destination are the same store\n`);
    return 2;
  }
  const opened: Pick<SessionStore, "close">[] = [];
  try {
    let from: CopySource, to: SessionStore;
    try {
      from = await openSource(fromUri!);
      opened.push(from);
      await (from as Partial<SessionStore>).ready?.();
      to = await openStoreFromUri(toUri!);
      opened.push(to);
      await to.ready?.();
    } catch (err) {
      process.stderr.write(`agentd: copy-store: ${(err as Error).message.split("\n")[0]}\n`);
      return 2;
    }
    process.stdout.write(`agentd: copying ${redactStoreUri(fromUri!)} to ${redactStoreUri(toUri!)}\n`);
    const report = await copyStore(from, to, {
      concurrency,
      onSession: (copy) => process.stdout.write(sessionLine(copy)),
      onFailure: (f) => process.stderr.write(`agentd: copy-store: ${f.status}: ${f.message}\n`),
    });
    if (report.webhookFailure) process.stderr.write(`agentd: copy-store: webhook outbox: ${report.webhookFailure}\n`);
    const ok = report.failures.length === 0 && !report.webhookFailure;
    process.stdout.write(
      `agentd: ${summary(report)}; ${ok ? "every session verified" : "NOT complete: run it again after fixing the failures above"}\n`,
    );
    return ok ? 0 : 1;
  } catch (err) {
    process.stderr.write(`agentd: copy-store: ${(err as Error).message.split("\n")[0]}\n`);
    return 2;
  } finally {
    for (const store of opened) await store.close?.().catch(() => undefined);
  }
}
