import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

/** One request the receiver got. */
export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  /** The status the receiver answered. */
  answered: number;
}

/** A real HTTP receiver of webhooks on 127.0.0.1. */
export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>/hook`. */
  url: string;
  port: number;
  /** Every request so far, in arrival order. */
  received: ReceivedWebhook[];
  /** The status of the next answers, one per request, then 204 (e.g. `[503]`: one 503, then successes); 0: never answer. */
  answers: number[];
  /** The `location` of 3xx answers. */
  redirectTo?: string;
  close(): Promise<void>;
}

/** Starts a receiver on `port` (default any free port) that records each POST and answers from `answers`. */
export async function startWebhookReceiver(port = 0): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const receiver: Partial<WebhookReceiver> = { received, answers: [] };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const answered = receiver.answers!.shift() ?? 204;
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), answered });
      if (answered === 0) return; // hangs: the sender's timeout must cut the attempt
      const location =
        answered >= 300 && answered < 400 && receiver.redirectTo ? { location: receiver.redirectTo } : {};
      res
        .writeHead(answered, location)
        .end(answered >= 300 ? "receiver says no (a body agentd must not log)" : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const bound = (server.address() as AddressInfo).port;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${bound}/hook`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  }) as WebhookReceiver;
}

/** Verifies `delivery` with `secret` (standardwebhooks); returns the parsed payload or throws. */
export function verifyWebhook(secret: string, delivery: ReceivedWebhook): unknown {
  const headers = {
    "webhook-id": String(delivery.headers["webhook-id"]),
    "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
    "webhook-signature": String(delivery.headers["webhook-signature"]),
  };
  return new Webhook(secret).verify(delivery.body, headers);
}
