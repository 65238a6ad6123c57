import type { DescMethod } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type { RandomRequests } from "./random-requests.js";

/**
 * Codes that are never the answer to a well-formed request of an
 * authenticated (or, with no auth configured, any) caller on a healthy
 * server: a server fault, a store fault, or a refusal it has no grounds for.
 */
export const SERVER_FAULTS: ReadonlySet<Code> = new Set([
  Code.Internal,
  Code.Unknown,
  Code.DataLoss,
  Code.Unavailable,
  Code.Unauthenticated,
  Code.PermissionDenied,
]);

/** A generated client's methods, called by name (the request's type is the method's). */
export type AnyClient = Record<string, (request: unknown, options: { signal: AbortSignal }) => unknown>;

/**
 * Calls `method` with `request` to its end within `timeoutMs` (then the
 * client cancels it): a unary call's answer, or every message of a stream
 * (a bidi call sends `request` as its only message). Resolves with what the
 * server answered; rejects with what the call failed with.
 */
export async function callToEnd(
  client: AnyClient,
  method: DescMethod,
  request: unknown,
  timeoutMs: number,
): Promise<unknown[]> {
  const signal = AbortSignal.timeout(timeoutMs);
  const fn = client[method.localName]!;
  if (method.methodKind === "unary") return [await fn(request, { signal })];
  const input =
    method.methodKind === "bidi_streaming"
      ? (async function* () {
          yield request;
        })()
      : request;
  const answered: unknown[] = [];
  for await (const message of fn(input, { signal }) as AsyncIterable<unknown>) answered.push(message);
  return answered;
}

/**
 * Sends `count` requests from `requests`, each to a method of `methods`
 * picked at random, `inFlight` at once, through `send`; resolves once all
 * have been sent and `send` has settled for each.
 */
export async function sendRandomRequests(
  requests: RandomRequests,
  methods: readonly DescMethod[],
  count: number,
  inFlight: number,
  send: (method: DescMethod, request: unknown) => Promise<void>,
): Promise<void> {
  let sent = 0;
  const worker = async (): Promise<void> => {
    while (sent < count) {
      sent++;
      const method = requests.pick(methods);
      await send(method, requests.request(method));
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}
