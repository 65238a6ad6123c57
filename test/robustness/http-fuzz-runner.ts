// Sends HTTP-layer fuzz cases (http-fuzz-cases.ts) to a server, one fresh TCP
// connection each, and classifies how each ended. A case passes when the
// server answered it (an HTTP/1 response; an HTTP/2 HEADERS, RST_STREAM or
// GOAWAY frame) or closed the connection, on its own or once the client
// half-closed; it hangs when neither happened. The server must stay alive.
import { connect } from "node:net";
import type { HttpFuzzCase } from "./http-fuzz-cases.js";

/** How one case ended: "HTTP <status>", "h2 HEADERS" / "h2 RST_STREAM" / "h2 GOAWAY", "closed" or "hang". */
export type HttpFuzzOutcome = string;

const H2_ANSWER_FRAMES: Record<number, string> = { 1: "h2 HEADERS", 3: "h2 RST_STREAM", 7: "h2 GOAWAY" };

/** The first answering HTTP/2 frame type in `bytes` (server frames: 9-byte headers and payloads), if any. */
function h2Answer(bytes: Buffer): string | undefined {
  let at = 0;
  while (at + 9 <= bytes.length) {
    const answer = H2_ANSWER_FRAMES[bytes[at + 3]];
    if (answer) return answer;
    at += 9 + bytes.readUIntBE(at, 3);
  }
  return undefined;
}

/** What `bytes` received so far say about the case, or undefined while there is no answer yet. */
function answerOf(c: HttpFuzzCase, bytes: Buffer): HttpFuzzOutcome | undefined {
  if (bytes.length === 0) return undefined;
  if (c.transport === "h2") return h2Answer(bytes);
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(bytes.toString("latin1", 0, 16));
  return status ? `HTTP ${status[1]}` : "HTTP ?";
}

/**
 * Sends one case to 127.0.0.1:`port` and resolves with its outcome: the
 * answer, "closed" (closed without one), or "hang" when the server neither
 * answered nor closed within `timeoutMs` of the bytes, then within
 * `timeoutMs` of the client's half-close.
 */
export function sendHttpFuzzCase(port: number, c: HttpFuzzCase, timeoutMs: number): Promise<HttpFuzzOutcome> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let received = Buffer.alloc(0);
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (outcome: HttpFuzzOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    socket.on("connect", () => {
      socket.write(c.bytes, () => undefined);
      timer = setTimeout(() => {
        socket.end();
        timer = setTimeout(() => finish("hang"), timeoutMs);
      }, timeoutMs);
    });
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const answer = answerOf(c, received);
      if (answer !== undefined) finish(answer);
    });
    socket.on("error", () => finish(answerOf(c, received) ?? "closed"));
    socket.on("close", () => finish(answerOf(c, received) ?? "closed"));
  });
}

/** The result of {@link runHttpFuzz}. */
export interface HttpFuzzReport {
  /** Outcome counts per input class. */
  table: Map<string, Map<HttpFuzzOutcome, number>>;
  /** Cases the server neither answered nor closed. */
  hangs: number;
  /** Cases sent before the run ended (all of them unless the server died). */
  sent: number;
}

/**
 * Sends `cases` with `concurrency` connections in flight, stopping early once
 * `alive()` turns false (the server exited), and tallies the outcomes.
 */
export async function runHttpFuzz(options: {
  port: number;
  cases: readonly HttpFuzzCase[];
  concurrency: number;
  timeoutMs: number;
  alive: () => boolean;
}): Promise<HttpFuzzReport> {
  const table = new Map<string, Map<HttpFuzzOutcome, number>>();
  let hangs = 0;
  let sent = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (next < options.cases.length && options.alive()) {
        const c = options.cases[next++];
        const outcome = await sendHttpFuzzCase(options.port, c, options.timeoutMs);
        sent++;
        if (outcome === "hang") hangs++;
        const row = table.get(c.cls) ?? new Map<HttpFuzzOutcome, number>();
        row.set(outcome, (row.get(outcome) ?? 0) + 1);
        table.set(c.cls, row);
      }
    }),
  );
  return { table, hangs, sent };
}

/** The report as a table: one row per input class, one column per outcome, then the totals. */
export function formatHttpFuzzReport(report: HttpFuzzReport): string {
  const outcomes = [...new Set([...report.table.values()].flatMap((row) => [...row.keys()]))].sort();
  const width = Math.max(...[...report.table.keys()].map((k) => k.length), "input class".length, "total".length);
  const columns = outcomes.map((o) => Math.max(o.length, 5));
  const line = (label: string, cells: (number | string)[]): string =>
    `${label.padEnd(width)}  ${cells.map((c, i) => String(c).padStart(columns[i])).join("  ")}`;
  const rows = [...report.table.entries()].sort(([a], [b]) => a.localeCompare(b));
  return [
    line("input class", outcomes),
    ...rows.map(([cls, row]) =>
      line(
        cls,
        outcomes.map((o) => row.get(o) ?? ""),
      ),
    ),
    line(
      "total",
      outcomes.map((o) => rows.reduce((n, [, row]) => n + (row.get(o) ?? 0), 0)),
    ),
  ].join("\n");
}
