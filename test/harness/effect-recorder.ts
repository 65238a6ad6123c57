import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One effect request the recorder got. */
export interface EffectRequest {
  key: string;
  tool: string;
  /** The process that sent it. */
  pid: number;
}

/**
 * A side-effect service for the durable tool-call tests, as an API honouring
 * idempotency keys does it (Stripe's `Idempotency-Key`): `POST /effect` with
 * header `Idempotency-Key` and body `{ tool, pid }` applies the effect once
 * per key (a repeat gets the first answer again) and answers
 * `{ tool, applied: <n-th effect overall>, by: <pid> }`. It counts requests
 * and applied effects per key. `holdNext`: tools whose next request is
 * applied but never answered (the caller is then killed mid-call).
 */
export interface EffectRecorder {
  url: string;
  /** Every request, in arrival order. */
  requests: EffectRequest[];
  /** Applied effects per key (a repeat of a key applies nothing). */
  applied: Map<string, number>;
  holdNext: Set<string>;
  close(): Promise<void>;
}

/** Starts a recorder on 127.0.0.1 (any free port). */
export async function startEffectRecorder(): Promise<EffectRecorder> {
  const requests: EffectRequest[] = [];
  const applied = new Map<string, number>();
  const answers = new Map<string, unknown>();
  const holdNext = new Set<string>();
  let effects = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const key = req.headers["idempotency-key"];
      const { tool, pid } = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as { tool: string; pid: number };
      if (typeof key !== "string" || !key) return void res.writeHead(400).end("Idempotency-Key is required");
      requests.push({ key, tool, pid });
      if (!answers.has(key)) {
        applied.set(key, (applied.get(key) ?? 0) + 1);
        answers.set(key, { tool, applied: ++effects, by: pid });
      }
      if (holdNext.delete(tool)) return; // applied, never answered
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answers.get(key)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    applied,
    holdNext,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
