// Generated malformed HTTP traffic for the HTTP-layer fuzz (issue 36): raw
// bytes for one TCP connection each, HTTP/1.x requests (authorities, headers,
// methods, request lines, chunked framing, pipelining) and HTTP/2 connections
// (the preface, then fuzzed SETTINGS and other frames, then one well-formed
// request the server must answer unless it closed the connection).
// Deterministic for a seed. Used by `npm run fuzz` and http-fuzz.test.ts.
import { prng } from "./bad-payloads.js";

/** One fuzz case: the bytes written to a fresh connection. */
export interface HttpFuzzCase {
  /** The input class (a row of the fuzz report). */
  cls: string;
  /** "h1" bytes go to the port as they are; "h2" bytes start with the HTTP/2 preface. */
  transport: "h1" | "h2";
  bytes: Buffer;
}

type Rand = () => number;
const int = (rand: Rand, n: number): number => Math.floor(rand() * n);
const pick = <T>(rand: Rand, xs: readonly T[]): T => xs[int(rand, xs.length)];
const randomBytes = (rand: Rand, n: number): Buffer => Buffer.from(Array.from({ length: n }, () => int(rand, 256)));

const HEALTH = "/grpc.health.v1.Health/Check";
const PATHS = [
  HEALTH,
  "/grpc.health.v1.Health/Watch",
  "/agentd.v1.AgentService/Run",
  "/agentd.v1.AgentService/Chat",
  "/agentd.v1.AgentService/RunStream",
  "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
  "/nope/Nope",
  "/",
  "*",
  `http://localhost:99999${HEALTH}`,
  `${HEALTH}?connect=v1&encoding=json&message=%7B%7D`,
  `${HEALTH}/../x`,
  "/%00",
];

/** Authorities that are not `host[:port]`, and odd ones that are. */
export const FUZZ_AUTHORITIES = [
  "localhost:99999",
  "a:b",
  "[::1",
  ":80",
  "",
  "[",
  "]",
  "[::1]:",
  "[::1]:99999",
  "[zz]",
  "localhost:-1",
  "localhost:+80",
  "localhost:0",
  "localhost:65536",
  "user@localhost",
  "a/b",
  "a?b",
  "a#b",
  "a\\b",
  "%zz",
  "localhost:80:80",
  "127.0.0.1:",
  "xn--",
  "ex ample",
  "\u00e9t\u00e9",
  "h".repeat(300),
  "localhost",
  "127.0.0.1:50051",
];

const CONTENT_TYPES = [
  "application/json",
  "application/proto",
  "application/grpc",
  "application/grpc-web+proto",
  "application/connect+json",
  "text/plain",
  "",
  ";;;",
];

function http1(
  method: string,
  target: string,
  headers: readonly [string, string][],
  body: Buffer | string = "",
  version = "HTTP/1.1",
): Buffer {
  const head = `${method} ${target} ${version}\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), Buffer.from(body as string, "latin1")]);
}

const jsonPost = (target: string, host: string | undefined, extra: [string, string][] = []): Buffer =>
  http1(
    "POST",
    target,
    [
      ...(host === undefined ? [] : ([["Host", host]] as [string, string][])),
      ["Content-Type", "application/json"],
      ["Content-Length", "2"],
      ...extra,
    ],
    "{}",
  );

const H1: Record<string, (rand: Rand) => Buffer> = {
  "h1-authority": (rand) => {
    const host = pick(rand, FUZZ_AUTHORITIES);
    return rand() < 0.15
      ? jsonPost(pick(rand, PATHS), host, [["Host", pick(rand, FUZZ_AUTHORITIES)]])
      : jsonPost(pick(rand, PATHS), host);
  },
  "h1-no-host": (rand) =>
    http1(
      "POST",
      pick(rand, PATHS),
      [
        ["Content-Type", pick(rand, CONTENT_TYPES)],
        ["Content-Length", "2"],
      ],
      "{}",
      pick(rand, ["HTTP/1.0", "HTTP/1.1"]),
    ),
  "h1-headers": (rand) => {
    const headers: [string, string][] = [["Host", "localhost"]];
    for (let n = 1 + int(rand, 6); n > 0; n--) {
      headers.push(
        pick(rand, [
          ["Content-Type", pick(rand, CONTENT_TYPES)],
          ["Content-Length", pick(rand, ["-1", "abc", "2, 3", "99999999999999999999", "2", " 2"])],
          ["Transfer-Encoding", pick(rand, ["chunked", "gzip", "chunked, chunked", "identity", "xchunked"])],
          ["grpc-timeout", pick(rand, ["0n", "abc", "99999999H", "1S", ""])],
          ["connect-timeout-ms", pick(rand, ["-5", "1e9", "0", "x"])],
          ["connect-protocol-version", pick(rand, ["1", "2", ""])],
          ["Authorization", pick(rand, ["Bearer", "Bearer ", "Basic %%%", "Bearer " + "t".repeat(5000)])],
          ["Origin", pick(rand, ["null", "http://evil.example", ""])],
          ["Expect", "100-continue"],
          ["Connection", pick(rand, ["close", "upgrade", "keep-alive, Upgrade"])],
          ["Upgrade", pick(rand, ["h2c", "websocket", "HTTP/2.0"])],
          ["X-Big", "v".repeat(int(rand, 20_000))],
          ["Bad Name", "x"],
          ["X-Ctl", "a\u0001b"],
          ["X-Fold", "a\r\n folded"],
          ["", "empty name"],
        ] as [string, string][]),
      );
    }
    return http1(pick(rand, ["POST", "GET"]), pick(rand, PATHS), headers, "{}");
  },
  "h1-method": (rand) =>
    http1(
      pick(rand, [
        "GET",
        "HEAD",
        "PUT",
        "DELETE",
        "OPTIONS",
        "TRACE",
        "CONNECT",
        "PATCH",
        "PRI",
        "post",
        "FOO",
        "G\tET",
      ]),
      pick(rand, PATHS),
      [
        ["Host", "localhost"],
        ["Access-Control-Request-Method", "POST"],
        ["Origin", "http://localhost"],
        ["Content-Type", pick(rand, CONTENT_TYPES)],
        ["Content-Length", "2"],
      ],
      "{}",
    ),
  "h1-request-line": (rand) =>
    Buffer.concat([
      Buffer.from(
        pick(rand, [
          "GET\r\n\r\n",
          "GET /\r\n\r\n",
          "GET / HTTP/9.9\r\nHost: localhost\r\n\r\n",
          "GET / HTTP/1.1 extra\r\nHost: localhost\r\n\r\n",
          "GET  /  HTTP/1.1\r\nHost: localhost\r\n\r\n",
          "\r\n\r\n\r\n",
          `GET /${"a".repeat(20_000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`,
          "POST /grpc.health.v1.Health/Check HTTP/1.1\nHost: localhost\nContent-Length: 2\n\n{}",
          "POST /grpc.health.v1.Health/Check HTTP/1.1\rHost: localhost\r\r",
          "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
          "PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
          "HTTP/1.1 200 OK\r\n\r\n",
        ]),
        "latin1",
      ),
      rand() < 0.3 ? randomBytes(rand, int(rand, 64)) : Buffer.alloc(0),
    ]),
  "h1-chunked": (rand) => {
    const chunks = pick(rand, [
      "2\r\n{}\r\n0\r\n\r\n",
      "1\r\n{\r\n1\r\n}\r\n0\r\n\r\n",
      "zz\r\n{}\r\n0\r\n\r\n",
      "-1\r\n{}\r\n0\r\n\r\n",
      "ffffffffffffffff\r\n{}\r\n",
      "2;ext=1\r\n{}\r\n0\r\nX-Trailer: 1\r\n\r\n",
      "2\r\n{}0\r\n\r\n",
      "2\r\n{}\r\n",
      "0\r\n\r\n",
      "2\n{}\n0\n\n",
      "7fffffff\r\n{}",
    ]);
    return http1(
      "POST",
      pick(rand, PATHS),
      [
        ["Host", pick(rand, ["localhost", "localhost:99999"])],
        ["Content-Type", pick(rand, ["application/json", "application/grpc-web+json", "application/connect+json"])],
        ["Transfer-Encoding", "chunked"],
        ...(rand() < 0.2 ? ([["Content-Length", "2"]] as [string, string][]) : []),
      ],
      chunks,
    );
  },
  "h1-pipelined": (rand) =>
    Buffer.concat(
      Array.from({ length: 2 + int(rand, 3) }, () =>
        jsonPost(pick(rand, PATHS), pick(rand, [...FUZZ_AUTHORITIES.slice(0, 4), "localhost"])),
      ),
    ),
  "h1-random-bytes": (rand) => randomBytes(rand, 1 + int(rand, 512)),
};

// ---- HTTP/2 ------------------------------------------------------------------

/** The HTTP/2 client connection preface. */
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
/** Stream id of the closing well-formed request: the largest odd id, above any the fuzz used. */
const LAST_STREAM = 0x7fffffff;

/** One HTTP/2 frame (RFC 9113 §4.1); `length` overrides the payload's real length. */
export function h2Frame(type: number, flags: number, stream: number, payload: Buffer, length = payload.length): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(length & 0xffffff, 0, 3);
  head.writeUInt8(type & 0xff, 3);
  head.writeUInt8(flags & 0xff, 4);
  head.writeUInt32BE(stream >>> 0, 5);
  return Buffer.concat([head, payload]);
}

/** An HPACK integer with an N-bit prefix (RFC 7541 §5.1). */
function hpackInt(value: number, prefixBits: number, flags = 0): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([flags | value]);
  const out = [flags | max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}

/** Header fields as HPACK literals without indexing, no Huffman (RFC 7541 §6.2.2). */
export function hpack(fields: readonly [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of fields) {
    const n = Buffer.from(name, "latin1");
    const v = Buffer.from(value, "latin1");
    parts.push(Buffer.from([0]), hpackInt(n.length, 7), n, hpackInt(v.length, 7), v);
  }
  return Buffer.concat(parts);
}

const requestFields = (path: string, authority: string): [string, string][] => [
  [":method", "POST"],
  [":scheme", "http"],
  [":path", path],
  [":authority", authority],
  ["content-type", "application/grpc"],
  ["te", "trailers"],
];

/** A SETTINGS frame with the given (id, value) pairs. */
const settings = (pairs: readonly [number, number][]): Buffer =>
  h2Frame(
    4,
    0,
    0,
    Buffer.concat(
      pairs.map(([id, value]) => {
        const b = Buffer.alloc(6);
        b.writeUInt16BE(id & 0xffff, 0);
        b.writeUInt32BE(value >>> 0, 2);
        return b;
      }),
    ),
  );

const H2: Record<string, (rand: Rand) => Buffer[]> = {
  "h2-settings": (rand) => {
    const pairs: [number, number][] = Array.from({ length: 1 + int(rand, 5) }, () => [
      pick(rand, [1, 2, 3, 4, 5, 6, 8, 9, 0, 7, 0xffff, int(rand, 0x10000)]),
      pick(rand, [0, 1, 2, 16_383, 16_384, 65_535, 2 ** 24, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, int(rand, 2 ** 32)]),
    ]);
    const frames = [settings(pairs)];
    if (rand() < 0.3) frames.push(h2Frame(4, 1, 0, randomBytes(rand, int(rand, 12)))); // ACK with a payload
    if (rand() < 0.2) frames.push(h2Frame(4, 0, 1 + 2 * int(rand, 10), Buffer.alloc(6))); // on a stream
    if (rand() < 0.2) frames.push(h2Frame(4, 0, 0, randomBytes(rand, 1 + int(rand, 5)))); // not 6k bytes
    return frames;
  },
  "h2-frames": (rand) =>
    Array.from({ length: 1 + int(rand, 6) }, () => {
      const type = pick(rand, [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 0xff, int(rand, 256)]);
      const stream = pick(rand, [0, 1, 2, 3, 0x7ffffffe, int(rand, 2 ** 31)]);
      const payload = randomBytes(rand, pick(rand, [0, 1, 4, 5, 8, 9, int(rand, 64)]));
      return h2Frame(type, int(rand, 256), stream, payload);
    }),
  "h2-headers": (rand) => {
    const fields = requestFields(pick(rand, PATHS), pick(rand, FUZZ_AUTHORITIES));
    const mutation = int(rand, 8);
    if (mutation === 0) fields.splice(int(rand, fields.length), 1); // a pseudo-header or header missing
    if (mutation === 1) fields.push([":path", "/again"]); // duplicated pseudo-header
    if (mutation === 2) fields.push(["connection", "keep-alive"]); // connection-specific header
    if (mutation === 3) fields.push(["Upper-Case", "x"]);
    if (mutation === 4) fields.push([":authority", "x"], ["host", pick(rand, FUZZ_AUTHORITIES)]);
    if (mutation === 5) fields.splice(0, 0, ["x-before", "pseudo"]); // a regular field before the pseudo-headers
    if (mutation === 6) fields.push(["content-length", pick(rand, ["5", "-1", "x"])]);
    let block = hpack(fields);
    if (rand() < 0.15) block = Buffer.concat([block, Buffer.from([0xff, 0xff, 0xff, 0x7f])]); // index out of range
    if (rand() < 0.1) block = randomBytes(rand, 1 + int(rand, 40));
    const stream = 1 + 2 * int(rand, 100);
    const flags = pick(rand, [0x5, 0x4, 0x1, 0x0, 0x25]);
    const frames = [h2Frame(1, flags, stream, block)];
    if (!(flags & 0x1) && rand() < 0.5) frames.push(h2Frame(0, 1, stream, randomBytes(rand, int(rand, 20))));
    if (!(flags & 0x4) && rand() < 0.5) frames.push(h2Frame(9, pick(rand, [0, 4]), stream, Buffer.alloc(0)));
    return frames;
  },
};

/** The input classes, in the order cases cycle through them. */
export const HTTP_FUZZ_CLASSES: readonly string[] = [...Object.keys(H1), ...Object.keys(H2)];

/** The `i`-th case of the class cycle (classes round-robin; bytes from `rand`). */
function fuzzCase(rand: Rand, i: number): HttpFuzzCase {
  const cls = HTTP_FUZZ_CLASSES[i % HTTP_FUZZ_CLASSES.length];
  const h1 = H1[cls];
  if (h1) return { cls, transport: "h1", bytes: h1(rand) };
  const closing = h2Frame(1, 0x5, LAST_STREAM, hpack(requestFields(HEALTH, "localhost")));
  return { cls, transport: "h2", bytes: Buffer.concat([PREFACE, settings([]), ...H2[cls](rand), closing]) };
}

/** `count` cases for `seed`, every class in turn: the same seed gives the same bytes. */
export function httpFuzzCases(seed: number, count: number): HttpFuzzCase[] {
  const rand = prng(seed);
  return Array.from({ length: count }, (_, i) => fuzzCase(rand, i));
}
