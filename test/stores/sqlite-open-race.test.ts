import { spawn } from "node:child_process";
import { SQL_SCHEMA_VERSION } from "../../stores/sql/sql-migrations.js";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SqlSessionStore } from "../../stores/sql/sql-store.js";
import { SqliteEngine } from "../../stores/sql/sqlite-engine.js";
import { REPO_ROOT } from "../harness/agentd-process.js";
import { typeScriptScriptArgs } from "../harness/typescript-script.js";

const OPENER = join(dirname(fileURLToPath(import.meta.url)), "sqlite-opener.ts");
const PROCESSES = 8;
const ROUNDS = 25;

/** A started opener process: `open` sends it a file and a session and resolves to the line it prints. */
interface Opener {
  ready: Promise<void>;
  open(path: string, sessionId: string): Promise<string>;
  end(): void;
}

function startOpener(): Opener {
  const child = spawn(`${REPO_ROOT}node_modules/.bin/node`, [...typeScriptScriptArgs(), OPENER], {
    cwd: REPO_ROOT,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const waiting: Array<(line: string) => void> = [];
  let buffered = "";
  child.stdout!.on("data", (data: Buffer) => {
    buffered += data.toString();
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      waiting.shift()?.(line);
    }
  });
  child.on("exit", (code) => {
    for (const w of waiting.splice(0)) w(`exited ${code}`);
  });
  const next = (): Promise<string> => new Promise((resolve) => waiting.push(resolve));
  const ready = next().then((line) => expect(line).toBe("ready"));
  return {
    ready,
    open: (path, sessionId) => {
      const line = next();
      child.stdin!.write(`${path} ${sessionId}\n`);
      return line;
    },
    end: () => child.stdin!.end(),
  };
}

describe("sqlite store: a fresh file opened by several processes at once", () => {
  it(
    `opens, migrates and commits in each of ${PROCESSES} processes on a new file at once, ${ROUNDS} times`,
    { timeout: 300_000 },
    async () => {
      const openers = Array.from({ length: PROCESSES }, startOpener);
      const dir = await mkdtemp(join(tmpdir(), "agentd-sqlite-open-race-"));
      try {
        await Promise.all(openers.map((o) => o.ready));
        for (let round = 0; round < ROUNDS; round++) {
          const path = join(dir, `round-${round}.db`);
          const outcomes = await Promise.all(openers.map((o, i) => o.open(path, `s${i}`)));
          expect({ round, outcomes }).toEqual({ round, outcomes: openers.map(() => "ok") });
          const store = new SqlSessionStore(new SqliteEngine(path));
          try {
            const heads = await store.engine.reader.query("SELECT session_id FROM heads ORDER BY session_id");
            expect(heads.map((h) => h.session_id)).toEqual(openers.map((_, i) => `s${i}`));
            const schema = await store.engine.reader.query("SELECT COUNT(*) AS n FROM agentd_schema");
            expect(Number(schema[0]!.n)).toBe(SQL_SCHEMA_VERSION);
          } finally {
            await store.close();
          }
        }
      } finally {
        for (const o of openers) o.end();
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
