import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { createAgentClient, messageText, type Conversation, type RetryPolicy } from "../../src/client/index.js";
import { REPO_ROOT } from "./agentd-process.js";
import type { KillRecord } from "./kill-restart-loop.js";

/**
 * The client workload of issue 47's crash test, the same in every client
 * language: `conversations` concurrent conversations of `turns` turns with
 * the `assistant` echo agent, each turn sent after the previous one ended,
 * with the client's default retry policy and no retry code of the caller's.
 * A turn that fails (an error, or a TurnEnd other than STOP) is counted; the
 * conversation then goes on in a new Chat that resumes its session (or a new
 * session when none was named yet), as a caller would.
 */
export interface Workload {
  /** Concurrent conversations. */
  conversations: number;
  /** Turns per conversation. */
  turns: number;
  /** Tags the inputs of this run (unique per round and language). */
  tag: string;
}

/** One turn as the driver saw it. */
export interface TurnResult {
  /** The input text (unique in the run). */
  text: string;
  /** True when the turn ended with finish reason STOP. */
  ok: boolean;
  /** The failure's code: an error's gRPC code name ("UNAVAILABLE"), or the TurnEnd's finish reason ("FAILED"). */
  code?: string;
  /** The failure's message: an error's message as the client gives it, or what ended the turn otherwise. */
  message?: string;
  /** When the call ended (ms since the epoch). */
  endMs: number;
}

/** What a driver reports (the JSON the Go and Python drivers print). */
export interface DriverResult {
  /** Per conversation: the sessions it used and its turns. */
  conversations: { sessions: string[]; turns: TurnResult[] }[];
  /** Retries the client made (its retry counter). */
  retries: number;
}

/** The language drivers: TypeScript runs in this process, Go and Python as child processes. */
export type ClientLanguage = "ts" | "go" | "python";

/** The text of turn `t` of conversation `c` (the drivers of every language build the same). */
export function turnText(tag: string, c: number, t: number): string {
  return `${tag} conversation ${c} turn ${t}`;
}

/** Runs `workload` with agentd's TypeScript client (gRPC; the default retry policy unless `retry` is given) against `url`. */
export async function runTypeScriptDriver(url: string, workload: Workload, retry?: RetryPolicy): Promise<DriverResult> {
  const client = createAgentClient(url, { protocol: "grpc", ...(retry ? { retry } : {}) });
  const conversations = await Promise.all(
    Array.from({ length: workload.conversations }, async (_, c) => {
      const sessions: string[] = [];
      const turns: TurnResult[] = [];
      let conversation: Conversation | undefined;
      const note = (): void => {
        const id = conversation?.sessionId;
        if (id && !sessions.includes(id)) sessions.push(id);
      };
      for (let t = 0; t < workload.turns; t++) {
        const text = turnText(workload.tag, c, t);
        const current = (conversation ??= client.chat(
          "assistant",
          sessions.length > 0 ? { sessionId: sessions.at(-1)! } : {},
        ));
        try {
          const end = await current.send(text);
          const ok = end.finishReason === "stop";
          const failure = { code: end.finishReason.toUpperCase(), message: `turn ended ${end.finishReason}` };
          turns.push({ text, ok, ...(ok ? {} : failure), endMs: Date.now() });
          note();
          if (!ok) conversation = undefined;
        } catch (err) {
          const error = ConnectError.from(err);
          turns.push({ text, ok: false, code: codeName(error.code), message: error.rawMessage, endMs: Date.now() });
          note();
          current.close();
          conversation = undefined;
        }
      }
      await conversation?.output().catch(() => undefined);
      note();
      return { sessions, turns };
    }),
  );
  return { conversations, retries: client.retryCount };
}

/** `Code.ResourceExhausted` as "RESOURCE_EXHAUSTED", the name the Go and Python drivers report. */
function codeName(code: Code): string {
  return Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

/** Runs `workload` with the Go client (bench/restart/go, `go run`) against `url`. */
export async function runGoDriver(url: string, workload: Workload): Promise<DriverResult> {
  return runChild("go", ["run", "."], join(REPO_ROOT, "bench/restart/go"), url, workload, { GOWORK: "off" });
}

/** Runs `workload` with the Python client (bench/restart/python_driver.py, the project's venv) against `url`. */
export async function runPythonDriver(url: string, workload: Workload): Promise<DriverResult> {
  const python = join(REPO_ROOT, ".tools/venv/bin/python");
  if (!existsSync(python)) throw new Error(`no ${python}: run bash scripts/setup-python.sh first`);
  return runChild(python, ["python_driver.py"], join(REPO_ROOT, "bench/restart"), url, workload, {});
}

/** Runs `workload` with the driver of `language`. */
export function runDriver(language: ClientLanguage, url: string, workload: Workload): Promise<DriverResult> {
  if (language === "go") return runGoDriver(url, workload);
  if (language === "python") return runPythonDriver(url, workload);
  return runTypeScriptDriver(url, workload);
}

function runChild(
  command: string,
  args: string[],
  cwd: string,
  url: string,
  workload: Workload,
  env: NodeJS.ProcessEnv,
): Promise<DriverResult> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      {
        cwd,
        env: {
          ...process.env,
          ...env,
          AGENTD_URL: url,
          CONVERSATIONS: String(workload.conversations),
          TURNS: String(workload.turns),
          TAG: workload.tag,
        },
        maxBuffer: 64 * 1024 * 1024,
        timeout: 30 * 60_000,
      },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`${command} ${args.join(" ")} failed: ${err.message}\n${stderr}`));
        try {
          resolve(JSON.parse(stdout) as DriverResult);
        } catch {
          reject(new Error(`${command} printed no result JSON:\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

/** What the store holds compared with what the driver saw. */
export interface StoredCheck {
  /** Turns the driver saw end STOP. */
  ok: number;
  /** Turns that failed for the caller. */
  failed: number;
  /** Inputs of successful turns missing from their conversation's sessions. */
  lost: string[];
  /** Inputs stored more than once. */
  duplicated: string[];
  /** Failed turns whose input was stored anyway (once): the turn ran, its answer was lost. */
  failedButStored: number;
}

/** Reads every session the driver used (through a TypeScript client on `url`) and checks its inputs. */
export async function checkStored(url: string, result: DriverResult): Promise<StoredCheck> {
  const reader = createAgentClient(url, { protocol: "grpc" });
  const check: StoredCheck = { ok: 0, failed: 0, lost: [], duplicated: [], failedButStored: 0 };
  for (const conversation of result.conversations) {
    const counts = new Map<string, number>();
    for (const sessionId of new Set(conversation.sessions)) {
      const snapshot = await reader.getSnapshot("assistant", { sessionId }, { timeoutMs: 60_000 });
      for (const message of snapshot.state?.messages ?? []) {
        if (message.role !== "user") continue;
        const text = messageText(message);
        counts.set(text, (counts.get(text) ?? 0) + 1);
      }
    }
    for (const turn of conversation.turns) {
      const stored = counts.get(turn.text) ?? 0;
      if (turn.ok) check.ok++;
      else check.failed++;
      if (turn.ok && stored === 0) check.lost.push(turn.text);
      if (!turn.ok && stored === 1) check.failedButStored++;
      if (stored > 1) check.duplicated.push(turn.text);
    }
  }
  return check;
}

/** Failed and completed calls between one kill and the next. */
export interface PerKill {
  /** The kill's number (from 1). */
  kill: number;
  /** From the SIGKILL until the next server listened, in ms. */
  downMs: number;
  /** Calls that ended (either way) after this kill and before the next. */
  calls: number;
  /** Of those, the failed ones, by code. */
  failed: Record<string, number>;
}

/** Splits the turns of `results` by the kill they followed (calls before the first kill are left out). */
export function perKill(kills: KillRecord[], results: DriverResult[]): PerKill[] {
  const rows: PerKill[] = kills.map((k, i) => ({ kill: i + 1, downMs: k.downMs, calls: 0, failed: {} }));
  for (const result of results)
    for (const conversation of result.conversations)
      for (const turn of conversation.turns) {
        const i = kills.findLastIndex((k) => k.at <= turn.endMs);
        if (i < 0) continue;
        const row = rows[i]!;
        row.calls++;
        if (!turn.ok) row.failed[turn.code ?? "?"] = (row.failed[turn.code ?? "?"] ?? 0) + 1;
      }
  return rows;
}

/**
 * The failed turns of `results` tallied by reason: the code and the message
 * with its variable parts (IDs, numbers, quoted values) replaced by `…`, so
 * the same cause counts as one reason. Most frequent first.
 */
export function failureReasons(results: DriverResult[]): [reason: string, count: number][] {
  const tally = new Map<string, number>();
  for (const result of results)
    for (const conversation of result.conversations)
      for (const turn of conversation.turns) {
        if (turn.ok) continue;
        const reason = `${turn.code ?? "?"}: ${normalizeMessage(turn.message ?? "")}`;
        tally.set(reason, (tally.get(reason) ?? 0) + 1);
      }
  return [...tally].sort((a, b) => b[1] - a[1]);
}

/** `message` without its variable parts (see {@link failureReasons}), at most 160 characters. */
export function normalizeMessage(message: string): string {
  return message
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, "…")
    .replace(/"[^"]*"|'[^']*'/g, "…")
    .replace(/\b[0-9a-z_-]*\d[0-9a-z_.:-]*\b/gi, "…")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, 160);
}
