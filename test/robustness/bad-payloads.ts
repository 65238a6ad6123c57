import { create, fromBinary, toBinary, type DescMessage } from "@bufbuild/protobuf";
import { RunRequestSchema } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { Role } from "../../gen/ts/agentd/v1/content_pb.js";

/** A small seeded PRNG (mulberry32): the same seed gives the same inputs. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Valid RunRequest encodings the mutations start from. */
export function validRunRequests(): Uint8Array[] {
  const text = (value: string) => ({ kind: { case: "text" as const, value } });
  return [
    create(RunRequestSchema, {
      init: { agent: "assistant" },
      input: { message: { role: Role.USER, content: [text("hello there")] } },
    }),
    create(RunRequestSchema, {
      init: { agent: "assistant", sessionId: "some-session" },
      input: {
        message: {
          role: Role.USER,
          content: [text("with metadata"), text("two parts")],
          metadata: { a: { b: [1, "x", true] } } as never,
        },
      },
    }),
    create(RunRequestSchema, {
      init: { agent: "notes", state: { messages: [{ role: Role.MODEL, content: [text("earlier")] }], artifacts: [] } },
      input: {
        message: {
          content: [
            {
              kind: {
                case: "toolRequest",
                value: { name: "t", ref: "r1", input: { kind: { case: "stringValue", value: "in" } } },
              },
            },
          ],
        },
      },
    }),
  ].map((m) => toBinary(RunRequestSchema, m));
}

/** Classes of undecodable payloads. */
export type BadPayloadClass =
  "random-bytes" | "bit-flip" | "truncated" | "bad-length" | "invalid-utf8" | "bad-wire-type";

export const BAD_PAYLOAD_CLASSES: readonly BadPayloadClass[] = [
  "random-bytes",
  "bit-flip",
  "truncated",
  "bad-length",
  "invalid-utf8",
  "bad-wire-type",
];

function decodes(schema: DescMessage, bytes: Uint8Array): boolean {
  try {
    fromBinary(schema, bytes);
    return true;
  } catch {
    return false;
  }
}

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

/** One candidate payload of `kind` (it may still decode; see {@link badPayloads}). */
function candidate(kind: BadPayloadClass, rand: () => number, bases: Uint8Array[]): Uint8Array {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const int = (n: number) => Math.floor(rand() * n);
  const base = Uint8Array.from(pick(bases));
  switch (kind) {
    case "random-bytes":
      return Uint8Array.from({ length: 1 + int(64) }, () => int(256));
    case "bit-flip": {
      for (let i = 0, n = 1 + int(4); i < n; i++) base[int(base.length)] ^= 1 << int(8);
      return base;
    }
    case "truncated":
      return base.slice(0, 1 + int(base.length - 1));
    case "bad-length": {
      // A length-delimited field whose length runs past the end of the message.
      const field = 1 + int(3);
      return Uint8Array.from([...base, (field << 3) | 2, ...varint(base.length + 1 + int(1_000_000)), 1, 2, 3]);
    }
    case "invalid-utf8": {
      // RunRequest.init (1) { agent (1): <bytes that are not UTF-8> }
      const bad = pick([[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x61, 0xfe, 0x62], [0xf8, 0x88, 0x80, 0x80, 0x80]]);
      const agent = [0x0a, bad.length, ...bad];
      return Uint8Array.from([0x0a, agent.length, ...agent]);
    }
    case "bad-wire-type": {
      // init (1) with wire type 5 / 1 (fixed32 / fixed64) cut short, or an end-group without a start.
      return Uint8Array.from(pick([[0x0d, 1], [0x09, 1, 2, 3], [0x0c], [0x0f], [0x0b, 0x0a, 0x00]]));
    }
  }
}

/**
 * `count` payloads of `kind` that protobuf-es cannot decode as `schema`
 * (checked locally, so the server must answer INVALID_ARGUMENT), from `seed`.
 */
export function badPayloads(
  kind: BadPayloadClass,
  count: number,
  seed: number,
  schema: DescMessage = RunRequestSchema,
): Uint8Array[] {
  const rand = prng(seed);
  const bases = validRunRequests();
  const out: Uint8Array[] = [];
  for (let attempts = 0; out.length < count && attempts < count * 200; attempts++) {
    const payload = candidate(kind, rand, bases);
    if (!decodes(schema, payload)) out.push(payload);
  }
  return out;
}

/** A JSON object nested `depth` levels deep: `{"d": {"d": ... {}}}`. */
export function nestedJson(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) value = { d: value };
  return value;
}
