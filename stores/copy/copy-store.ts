import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionHead, SessionStore } from "../snapshot-store.js";
import { hasWebhookOutbox } from "../webhook-outbox.js";
import type { CopySource } from "./copy-source.js";
import { copySession, type SessionCopy } from "./copy-session.js";
import { copyWebhookEvents, type WebhookCopy } from "./copy-webhooks.js";

/** Heads one `scanHeads` call asks the source for. */
const SCAN_PAGE = 200;

/** Options of {@link copyStore}. */
export interface StoreCopyOptions {
  /** Sessions copied at the same time (default 4; at least 1). */
  concurrency?: number;
  /** Called once per session copied and verified, in completion order. */
  onSession?: (copy: SessionCopy) => void;
  /** Called once per session that failed to copy or verify (the copy goes on with the others). */
  onFailure?: (failure: SessionCopyFailure) => void;
}

/** A session {@link copyStore} could not copy or verify. */
export interface SessionCopyFailure {
  sessionId: string;
  /** The error's gRPC status name (INTERNAL for an unexpected error). */
  status: string;
  /** What went wrong, naming the session (no conversation content). */
  message: string;
}

/** What {@link copyStore} did. */
export interface StoreCopyReport {
  /** Sessions the source holds (every owner and agent). */
  sessions: number;
  /** Of those: written whole now, completed (an earlier copy was cut short), already there unchanged. */
  copied: number;
  completed: number;
  unchanged: number;
  /** Records of the sessions copied and verified. */
  records: number;
  /** Records written by this run. */
  written: number;
  /** The sessions that failed, sessionId ascending. */
  failures: SessionCopyFailure[];
  /** The webhook outbox's copy; undefined when the source keeps no outbox. */
  webhooks?: WebhookCopy;
  /** Why the outbox's copy failed, when it did. */
  webhookFailure?: string;
}

/**
 * Copies every session of `from` (enumerated with `scanHeads`, every owner
 * and agent, expired-but-unswept ones included) into `to` with
 * {@link copySession} (resumable, verified by count and checksum per
 * session), then the webhook outbox events of every owner seen (see
 * `copyWebhookEvents`). A session that fails is reported and the others are
 * still copied: the report's `failures` lists them, and a run is complete
 * exactly when it is empty and `webhookFailure` is unset. Running it again
 * after an interruption or a failure finishes the job without duplicating
 * anything. Throws FAILED_PRECONDITION before writing anything when the
 * source cannot enumerate its sessions (no `scanHeads`). Chunk logs (the
 * replay buffers of running detached work) are not copied.
 */
export async function copyStore(
  from: CopySource,
  to: SessionStore,
  options: StoreCopyOptions = {},
): Promise<StoreCopyReport> {
  const scan = from.scanHeads?.bind(from);
  if (!scan) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      "the source store cannot list every session (it has no scanHeads), so it cannot be copied from",
    );
  }
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 4));
  const report: StoreCopyReport = {
    sessions: 0,
    copied: 0,
    completed: 0,
    unchanged: 0,
    records: 0,
    written: 0,
    failures: [],
  };
  const owners = new Set<string>([""]);
  const copyOne = async (head: SessionHead): Promise<void> => {
    try {
      const copy = await copySession(from, to, head);
      report[copy.outcome === "copied" ? "copied" : copy.outcome === "completed" ? "completed" : "unchanged"]++;
      report.records += copy.records;
      report.written += copy.written;
      options.onSession?.(copy);
    } catch (err) {
      const error = AgentError.from(err);
      const failure = { sessionId: head.sessionId, status: error.status, message: error.message };
      report.failures.push(failure);
      options.onFailure?.(failure);
    }
  };
  let after: string | undefined;
  for (;;) {
    const heads = await scan(after, SCAN_PAGE);
    // A scan that ignores its cursor would copy the same page for ever.
    if (after !== undefined && heads.some((h) => h.sessionId === after))
      throw new AgentError(
        "FAILED_PRECONDITION",
        `the source store's scanHeads returned session ${after} again after it; it cannot be copied from`,
      );
    report.sessions += heads.length;
    for (const head of heads) owners.add(head.owner);
    for (let i = 0; i < heads.length; i += concurrency) await Promise.all(heads.slice(i, i + concurrency).map(copyOne));
    if (heads.length < SCAN_PAGE) break;
    after = heads[heads.length - 1]!.sessionId;
  }
  report.failures.sort((a, b) => (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0));
  const outbox = from.webhookOutbox?.();
  if (outbox) {
    try {
      const destination = hasWebhookOutbox(to) ? to.webhookOutbox() : undefined;
      report.webhooks = await copyWebhookEvents(outbox, destination, [...owners].sort());
    } catch (err) {
      report.webhookFailure = AgentError.from(err).message;
    }
  }
  return report;
}
