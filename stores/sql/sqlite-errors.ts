import { AgentError, type StatusName } from "../../src/errors/agent-error.js";

/** What a `node:sqlite` error carries (also what the writer thread sends back). */
export interface SqliteErrorInfo {
  message: string;
  /** SQLite's extended result code, when the error came from SQLite. */
  errcode?: number;
  errstr?: string;
}

/** The status an SQLite result code maps to (primary code = low byte of the extended one). */
function statusOf(errcode: number | undefined): StatusName {
  if (errcode === undefined) return "INTERNAL";
  if (errcode === 1555 || errcode === 2067) return "ALREADY_EXISTS"; // CONSTRAINT_PRIMARYKEY, CONSTRAINT_UNIQUE
  switch (errcode & 0xff) {
    case 5: // BUSY
    case 6: // LOCKED
    case 10: // IOERR
    case 14: // CANTOPEN
      return "UNAVAILABLE";
    case 13: // FULL
      return "RESOURCE_EXHAUSTED";
    case 11: // CORRUPT
    case 26: // NOTADB
      return "DATA_LOSS";
    default:
      return "INTERNAL";
  }
}

/**
 * An SQLite failure as an AgentError naming the database file: ALREADY_EXISTS
 * for a unique-key violation, UNAVAILABLE for a database that stays locked
 * or cannot be read or written, RESOURCE_EXHAUSTED for a full disk,
 * DATA_LOSS for a damaged file, INTERNAL otherwise. SQLite's messages name
 * tables and columns, never stored values.
 */
export function sqliteError(info: SqliteErrorInfo, path: string): AgentError {
  if (info instanceof AgentError) return info;
  const status = statusOf(info.errcode);
  const hint =
    status === "UNAVAILABLE"
      ? " (another process may hold the database locked, or its directory is not writable)"
      : status === "DATA_LOSS"
        ? " (restore the file from a backup)"
        : "";
  return new AgentError(status, `sqlite store ${path}: ${info.message}${hint}`, {
    details: info.errcode !== undefined ? { sqliteCode: info.errcode } : {},
  });
}
