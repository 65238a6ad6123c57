import { SWITCH_TO_WAL_SOURCE } from "./sqlite-wal.js";

/**
 * The source of the SQLite writer thread (run with `new Worker(source, {
 * eval: true })`, so it needs no file of its own next to the compiled or the
 * TypeScript sources). It opens its own connection to the database file
 * (WAL, synchronous=FULL, a busy timeout so writers of other processes take
 * turns) and runs the statements each message carries, in order, replying
 * with their rows or changed-row counts, or with the first error. Only
 * `node:` built-ins, plain JavaScript.
 *
 * Messages in: `{ id, stmts: [{ sql, params, rows, guard }] }`; out: `{ id, results }`,
 * `{ id, index, error: { message, errcode, errstr } }` (the statements
 * before `index` ran; none after it did) or `{ id, index, conflict: true }`
 * (statement `index`, a guard, changed no row; none after it ran).
 */
export const SQLITE_WRITER_SOURCE = String.raw`
const { parentPort, workerData } = require("node:worker_threads");
const originalEmitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  const text = typeof warning === "string" ? warning : warning && warning.message;
  if (typeof text === "string" && text.includes("SQLite is an experimental feature")) return;
  return originalEmitWarning.call(process, warning, ...rest);
};
const { DatabaseSync } = require("node:sqlite");
process.emitWarning = originalEmitWarning;
${SWITCH_TO_WAL_SOURCE}

let db;
const statements = new Map();
function prepared(sql) {
  let stmt = statements.get(sql);
  if (!stmt) {
    stmt = db.prepare(sql);
    statements.set(sql, stmt);
  }
  return stmt;
}
try {
  db = new DatabaseSync(workerData.path);
  db.exec("PRAGMA busy_timeout = " + Number(workerData.busyTimeoutMs));
  switchToWal(db, Number(workerData.busyTimeoutMs));
  db.exec("PRAGMA synchronous = " + (workerData.synchronous === "NORMAL" ? "NORMAL" : "FULL"));
  parentPort.postMessage({ id: 0, results: [] });
} catch (err) {
  parentPort.postMessage({ id: 0, error: { message: String(err && err.message), errcode: err && err.errcode, errstr: err && err.errstr } });
}
parentPort.on("message", (message) => {
  if (message === "close") {
    try {
      if (db && db.isTransaction) db.exec("ROLLBACK");
      db && db.close();
    } catch {}
    parentPort.close();
    return;
  }
  const results = [];
  let index = 0;
  try {
    for (const s of message.stmts) {
      if (s.params === undefined || s.params.length === 0) {
        if (s.rows) results.push(prepared(s.sql).all());
        else if (/^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)/.test(s.sql)) {
          db.exec(s.sql);
          results.push(0);
        } else results.push(Number(prepared(s.sql).run().changes));
      } else if (s.rows) results.push(prepared(s.sql).all(...s.params));
      else results.push(Number(prepared(s.sql).run(...s.params).changes));
      if (s.guard && results[index] === 0) {
        parentPort.postMessage({ id: message.id, index, conflict: true });
        return;
      }
      index++;
    }
    parentPort.postMessage({ id: message.id, results });
  } catch (err) {
    parentPort.postMessage({
      id: message.id,
      index,
      error: { message: String(err && err.message), errcode: err && err.errcode, errstr: err && err.errstr },
    });
  }
});
`;
