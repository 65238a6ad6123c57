import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionHead, SnapshotRecord } from "../snapshot-store.js";

/** Suffix of a format-2 session head file (`sessions/<key>.head.json`: `{"format":2,"head":…}`). */
const HEAD_SUFFIX = ".head.json";

/** A session of a format-2 directory: its head and where its index lies. */
export interface Format2Session {
  head: SessionHead;
  /** `sessions/<key>.idx`: `createdAt<TAB>snapshotId` lines, first commit first. */
  indexPath: string;
}

/** Every session of a format-2 store (or tenant prefix) directory. DATA_LOSS for a head file that is not one. */
export function format2Sessions(dir: string): Format2Session[] {
  const sessionsDir = join(dir, "sessions");
  const sessions: Format2Session[] = [];
  for (const name of readdirSync(sessionsDir).sort()) {
    if (!name.endsWith(HEAD_SUFFIX)) continue;
    const path = join(sessionsDir, name);
    let parsed: { format?: unknown; head?: SessionHead } | undefined;
    try {
      parsed = JSON.parse(readFileSync(path, "utf8")) as typeof parsed;
    } catch {
      parsed = undefined;
    }
    const head = parsed?.head;
    if (parsed?.format !== 2 || !head || typeof head.sessionId !== "string")
      throw new AgentError("DATA_LOSS", `${path} is not a format-2 session head; restore it or remove it`);
    sessions.push({ head, indexPath: join(sessionsDir, `${name.slice(0, -HEAD_SUFFIX.length)}.idx`) });
  }
  return sessions;
}

/**
 * The records of a format-2 session: those its index lists whose record file
 * (`records/<snapshotId>.json`: `{"format":2,"version":…,"record":…}`) exists
 * and belongs to it, in the index's order. A listed record whose file is gone
 * (a delete a crash interrupted) is skipped, as format 2 did; DATA_LOSS for a
 * record file that is not JSON.
 */
export function format2Records(dir: string, session: Format2Session): SnapshotRecord[] {
  let index: string;
  try {
    index = readFileSync(session.indexPath, "utf8");
  } catch {
    return [];
  }
  const ids = new Set(
    index.split("\n").flatMap((line) => (line.includes("\t") ? [line.slice(line.indexOf("\t") + 1)] : [])),
  );
  const records: SnapshotRecord[] = [];
  for (const id of ids) {
    if (!id) continue;
    const path = join(dir, "records", `${id}.json`);
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch {
      continue;
    }
    let parsed: { format?: unknown; record?: SnapshotRecord };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch (err) {
      throw new AgentError("DATA_LOSS", `record file ${path} is not a format-2 record; restore it or remove it`, {
        cause: err,
      });
    }
    if (parsed.format === 2 && parsed.record?.sessionId === session.head.sessionId) records.push(parsed.record);
  }
  return records;
}
