import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { isPrivateAddress } from "./address-policy.js";

/** How an attempt went: 2xx, or why not (a status code or a transport error; never the response body). */
export type SendOutcome = { ok: true; status: number } | { ok: false; error: string };

/** What {@link sendWebhook} needs besides the request. */
export interface SendPolicy {
  /** Give up on an attempt after this long (connect, send and response headers). */
  timeoutMs: number;
  /** Allow private and loopback addresses (`--webhook-allow-private`). */
  allowPrivate: boolean;
}

/**
 * POSTs `body` to `url` once: no redirect is followed (a 3xx is a failed
 * attempt), the response body is drained unread, and the whole attempt is cut
 * at `timeoutMs`. Without `allowPrivate` every address the host resolves to
 * is checked when connecting (so a DNS answer cannot swap in a private
 * address after a check) and a private or loopback one fails the attempt.
 * Never rejects.
 */
export function sendWebhook(
  url: URL,
  headers: Record<string, string>,
  body: string,
  policy: SendPolicy,
): Promise<SendOutcome> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (!policy.allowPrivate && isIP(host) && isPrivateAddress(host))
    return Promise.resolve({ ok: false, error: `refused: ${host} is a private or loopback address` });
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: SendOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const options: RequestOptions = {
      method: "POST",
      headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
      ...(policy.allowPrivate ? {} : { lookup: publicOnlyLookup }),
    };
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const req = send(url, options, (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      res.resume();
      finish(status >= 200 && status < 300 ? { ok: true, status } : { ok: false, error: `HTTP ${status}` });
    });
    const timer = setTimeout(() => {
      req.destroy();
      finish({ ok: false, error: `timed out after ${policy.timeoutMs} ms` });
    }, policy.timeoutMs);
    req.on("error", (err: NodeJS.ErrnoException) => finish({ ok: false, error: err.code ?? err.message }));
    req.end(body);
  });
}

/** A DNS lookup that fails with EPRIVATE when any resolved address is private or loopback. */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, "", 0);
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    if (bad) {
      const refused: NodeJS.ErrnoException = new Error(`refused: ${hostname} resolves to a private address`);
      refused.code = "refused: the host resolves to a private or loopback address";
      return callback(refused, "", 0);
    }
    if (options.all) return callback(null, addresses as never, 0);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
};
