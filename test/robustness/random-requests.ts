import {
  create,
  fromJson,
  ScalarType,
  type DescField,
  type DescMessage,
  type DescMethod,
  type JsonValue,
} from "@bufbuild/protobuf";
import { StructSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Role } from "../../gen/ts/agentd/v1/content_pb.js";

/** What a generated request may name besides random values: the server's agents, and sessions and snapshots that exist. */
export interface KnownNames {
  agents: string[];
  sessions: string[];
  snapshots: string[];
}

/** Options of {@link RandomRequests}. */
export interface RandomRequestOptions {
  /** Chance that each optional field (and each oneof) is set. Default 0.15: most requests are near a valid one. */
  fieldChance?: number;
  /**
   * Chance that a request starts from a valid one (an existing agent, a
   * session that exists, a user text message) before random fields are laid
   * over it, so calls reach past validation into the runtime and the store.
   * Default 0.8.
   */
  validBase?: number;
}

/** Integer and float edge values, by protobuf scalar kind. */
const INT32 = [0, -1, 1, 100, 2147483647, -2147483648];
const UINT32 = [0, 1, 100, 4294967295];
const INT64 = [0n, -1n, 1n, 315_360_000_000n, 9223372036854775807n, -9223372036854775808n];
const UINT64 = [0n, 1n, 18446744073709551615n];
const DOUBLE = [0, -0, -1, 0.5, 3.4e38, 1e308, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
/** Seconds and nanos of Timestamps and Durations, past their valid ranges too. */
const SECONDS = [0n, -1n, 1n, 315537897599n, 999999999999n, -62135596801n];
const NANOS = [0, -1, 999999999, 1000000000];
/** Field-mask paths, real ones and not. */
const MASK_PATHS = ["labels", "ttl", "labels.team", "display_name", "state", "*", "", "x"];
/** Map keys: ordinary, empty, long, spaced, dotted. */
const MAP_KEYS = ["team", "", "a".repeat(300), "UPPER", "with space", "ok-key", "k.k"];

/**
 * Well-formed requests with random contents for any method of a service,
 * built from its descriptors (no hand-written cases): every field of every
 * message can come out unset, empty, very long (70,000 characters or
 * bytes), at the edge of its type (int64 limits, NaN and infinities, enum
 * numbers the schema does not define, Timestamps out of range), as a
 * list of 40 or a map of 70, or nested JSON values, while names are often
 * real ones ({@link KnownNames}) so calls go deep. Seeded: the same `rnd`
 * gives the same requests.
 */
export class RandomRequests {
  private readonly fieldChance: number;
  private readonly validBase: number;

  constructor(
    private readonly rnd: () => number,
    private readonly known: KnownNames,
    options: RandomRequestOptions = {},
  ) {
    this.fieldChance = options.fieldChance ?? 0.15;
    this.validBase = options.validBase ?? 0.8;
  }

  /** One request of `method`'s input type. */
  request(method: DescMethod): ReturnType<typeof create> {
    const init = this.message(method.input, 0) as Record<string, unknown>;
    if (this.rnd() < this.validBase) this.layOverValid(method, init);
    return create(method.input, init);
  }

  /** One of `items`. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.rnd() * items.length)]!;
  }

  /** Sets the names (and, for turn methods, the init and a user message) a valid request of `method` has. */
  private layOverValid(method: DescMethod, init: Record<string, unknown>): void {
    const has = (name: string) => method.input.fields.some((f) => f.localName === name);
    const agent = this.pick(this.known.agents);
    if (has("init")) {
      const random = (init.init ?? {}) as Record<string, unknown>;
      init.init = {
        ...(this.rnd() < 0.5 ? random : {}),
        agent,
        ...(this.rnd() < 0.5 ? { sessionId: this.pick(this.known.sessions) } : {}),
      };
      const message = { role: Role.USER, content: [{ kind: { case: "text", value: "hi" } }] };
      init.input = { ...(this.rnd() < 0.5 ? (init.input as object) : {}), message };
      return;
    }
    if (has("sessionId") && this.rnd() < 0.7) init.sessionId = this.pick(this.known.sessions);
    if (has("snapshotId") && this.rnd() < 0.7) init.snapshotId = this.pick(this.known.snapshots);
    if (has("agent") && this.rnd() < 0.7) init.agent = agent;
  }

  private message(desc: DescMessage, depth: number): unknown {
    switch (desc.typeName) {
      case "google.protobuf.Value":
        return fromJson(ValueSchema, this.json(depth));
      case "google.protobuf.Struct":
        return fromJson(StructSchema, this.jsonObject(depth));
      case "google.protobuf.Timestamp":
      case "google.protobuf.Duration":
        return { seconds: this.pick(SECONDS), nanos: this.pick(NANOS) };
      case "google.protobuf.FieldMask":
        return { paths: Array.from({ length: this.pick([0, 1, 2]) }, () => this.pick(MASK_PATHS)) };
    }
    const init: Record<string, unknown> = {};
    if (depth > 5) return init;
    for (const field of desc.fields) {
      if (!field.oneof && this.rnd() < this.fieldChance) init[field.localName] = this.field(field, depth);
    }
    for (const oneof of desc.oneofs) {
      if (this.rnd() >= this.fieldChance * 2) continue;
      const field = this.pick(oneof.fields);
      init[oneof.localName] = { case: field.localName, value: this.field(field, depth) };
    }
    return init;
  }

  private field(field: DescField, depth: number): unknown {
    switch (field.fieldKind) {
      case "scalar":
        return this.scalar(field.scalar);
      case "enum":
        return this.pick([...field.enum.values.map((v) => v.number), 99, -1]);
      case "message":
        return this.message(field.message, depth + 1);
      case "list":
        return Array.from({ length: this.pick([0, 1, 2, 5, 40]) }, () =>
          field.listKind === "scalar"
            ? this.scalar(field.scalar)
            : field.listKind === "enum"
              ? this.pick([0, 1, 99])
              : this.message(field.message, depth + 1),
        );
      case "map": {
        const map: Record<string, unknown> = {};
        for (let i = this.pick([0, 1, 3, 70]); i > 0; i--) {
          const value =
            field.mapKind === "scalar"
              ? this.scalar(field.scalar)
              : field.mapKind === "enum"
                ? 1
                : this.message(field.message, depth + 1);
          map[`${this.pick(MAP_KEYS)}${i > 3 ? i : ""}`] = value;
        }
        return map;
      }
    }
  }

  /** A value of protobuf scalar type `scalar`. */
  private scalar(scalar: ScalarType): unknown {
    switch (scalar) {
      case ScalarType.STRING:
        return this.string();
      case ScalarType.BYTES:
        return this.pick([new Uint8Array(0), new Uint8Array(3), new Uint8Array(70_000).fill(255)]);
      case ScalarType.BOOL:
        return this.rnd() < 0.5;
      case ScalarType.DOUBLE:
      case ScalarType.FLOAT:
        return this.pick(DOUBLE);
      case ScalarType.INT64:
      case ScalarType.SFIXED64:
      case ScalarType.SINT64:
        return this.pick(INT64);
      case ScalarType.UINT64:
      case ScalarType.FIXED64:
        return this.pick(UINT64);
      case ScalarType.UINT32:
      case ScalarType.FIXED32:
        return this.pick(UINT32);
      default: // INT32, SINT32, SFIXED32
        return this.pick(INT32);
    }
  }

  private string(): string {
    return this.pick([
      "",
      " ",
      "x",
      "a".repeat(200),
      "a".repeat(70_000),
      "\u0000",
      "💥",
      "../etc/passwd",
      "%",
      "{}",
      "-1",
      "null",
      "00000000-0000-0000-0000-000000000000",
      `${this.pick(this.known.agents)}\u0000`,
      this.pick(this.known.agents).toUpperCase(),
      this.pick(this.known.agents),
      this.pick(this.known.sessions),
      this.pick(this.known.snapshots),
    ]);
  }

  private json(depth: number): JsonValue {
    if (depth > 4) return null;
    switch (Math.floor(this.rnd() * 6)) {
      case 0:
        return null;
      case 1:
        return this.rnd() * 100;
      case 2:
        return this.string();
      case 3:
        return this.rnd() < 0.5;
      case 4:
        return Array.from({ length: Math.floor(this.rnd() * 3) }, () => this.json(depth + 1));
      default:
        return this.jsonObject(depth);
    }
  }

  private jsonObject(depth: number): { [key: string]: JsonValue } {
    const entries = Array.from({ length: Math.floor(this.rnd() * 3) }, () => [this.string(), this.json(depth + 1)]);
    return Object.fromEntries(entries) as { [key: string]: JsonValue };
  }
}
