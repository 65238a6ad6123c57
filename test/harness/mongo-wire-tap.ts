import { connect, createServer, type Server, type Socket } from "node:net";
import { BSON, type Document } from "mongodb";

/** OP_MSG, the opcode of every command a current driver sends. */
const OP_MSG = 2013;
/** OP_MSG flag: a CRC-32C checksum follows the sections. */
const CHECKSUM_PRESENT = 1;

/** What a {@link MongoWireTap} has seen since it started (or since {@link MongoWireTap.reset}). */
export interface WireCounts {
  /** TCP connections accepted. */
  connections: number;
  /** Connections open now. */
  openConnections: number;
  /** Most connections open at once. */
  peakConnections: number;
  /** Commands sent, by `<command> <collection>` (e.g. `update snapshots`, `getMore stream_chunks`). */
  commands: Map<string, number>;
  /** Change streams opened: aggregates whose first stage is `$changeStream`. */
  changeStreams: number;
  /** Write statements: inserted documents, update and delete statements, findAndModify commands (each at least one oplog entry when it matches). */
  writeStatements: number;
}

/**
 * A TCP proxy between one MongoDB client (an agentd process) and its server
 * that reads the client's side of the MongoDB wire protocol (OP_MSG) and
 * counts connections, commands by name and collection, change streams
 * opened and write statements. It forwards every byte unchanged, so the
 * client talks to the real server; point the client at {@link uri} with
 * `directConnection=true` (a replica-set URI would follow the server's host
 * list past the tap).
 */
export class MongoWireTap {
  private counts: WireCounts = MongoWireTap.empty();
  private readonly sockets = new Set<Socket>();
  /** Called with every command the client sends (tests that inspect what was written). */
  listener: ((command: Document) => void) | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Starts a tap on a free loopback port forwarding to `targetPort` on 127.0.0.1. */
  static async start(targetPort: number): Promise<MongoWireTap> {
    const accept: { to?: MongoWireTap } = {};
    const server = createServer((client) => {
      if (accept.to) accept.to.accept(client, targetPort);
      else client.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    accept.to = new MongoWireTap(server, (server.address() as { port: number }).port);
    return accept.to;
  }

  /** The counts since the start or the last reset. */
  get snapshot(): WireCounts {
    return { ...this.counts, commands: new Map(this.counts.commands) };
  }

  /** Starts counting again from zero (open connections stay counted as open, and as the new peak). */
  reset(): void {
    const open = this.counts.openConnections;
    this.counts = { ...MongoWireTap.empty(), openConnections: open, peakConnections: open };
  }

  /** Closes the listener and every proxied connection. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private static empty(): WireCounts {
    return {
      connections: 0,
      openConnections: 0,
      peakConnections: 0,
      commands: new Map(),
      changeStreams: 0,
      writeStatements: 0,
    };
  }

  private accept(client: Socket, targetPort: number): void {
    const upstream = connect(targetPort, "127.0.0.1");
    this.sockets.add(client).add(upstream);
    this.counts.connections++;
    this.counts.openConnections++;
    this.counts.peakConnections = Math.max(this.counts.peakConnections, this.counts.openConnections);
    let pending: Buffer = Buffer.alloc(0);
    client.on("data", (data: Buffer) => {
      upstream.write(data);
      pending = pending.length === 0 ? data : Buffer.concat([pending, data]);
      pending = this.readMessages(pending);
    });
    upstream.on("data", (data: Buffer) => client.write(data));
    let closed = false;
    const close = (): void => {
      if (closed) return;
      closed = true;
      this.counts.openConnections--;
      this.sockets.delete(client);
      this.sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", close).on("error", close);
    upstream.on("close", close).on("error", close);
  }

  /** Counts every whole message at the head of `buffer`; returns the rest. */
  private readMessages(buffer: Buffer): Buffer {
    let rest: Buffer = buffer;
    while (rest.length >= 16) {
      const length = rest.readInt32LE(0);
      if (rest.length < length) break;
      if (rest.readInt32LE(12) === OP_MSG) this.countMessage(rest.subarray(0, length));
      rest = rest.subarray(length);
    }
    return rest;
  }

  private countMessage(message: Buffer): void {
    const end = message.length - ((message.readUInt32LE(16) & CHECKSUM_PRESENT) !== 0 ? 4 : 0);
    let at = 20;
    let command: Document | undefined;
    let sequenced = 0;
    while (at < end) {
      const kind = message[at]!;
      const size = message.readInt32LE(at + 1);
      if (kind === 0) command = BSON.deserialize(message.subarray(at + 1, at + 1 + size));
      else sequenced += documentsIn(message.subarray(at + 1, at + 1 + size));
      at += 1 + size;
    }
    if (command) this.countCommand(command, sequenced);
  }

  private countCommand(command: Document, sequenced: number): void {
    const name = Object.keys(command)[0] ?? "?";
    const target = command[name] as unknown;
    const collection = typeof target === "string" ? target : name === "getMore" ? String(command.collection ?? "") : "";
    const key = `${name} ${collection}`.trim();
    this.listener?.(command);
    this.counts.commands.set(key, (this.counts.commands.get(key) ?? 0) + 1);
    const pipeline = command.pipeline as Document[] | undefined;
    if (name === "aggregate" && pipeline?.[0]?.$changeStream !== undefined) this.counts.changeStreams++;
    const statements = (field: string): number =>
      Array.isArray(command[field]) ? (command[field] as unknown[]).length : 0;
    if (name === "insert") this.counts.writeStatements += statements("documents") + sequenced;
    else if (name === "update") this.counts.writeStatements += statements("updates") + sequenced;
    else if (name === "delete") this.counts.writeStatements += statements("deletes") + sequenced;
    else if (name === "findAndModify") this.counts.writeStatements++;
  }
}

/** The documents of an OP_MSG document-sequence section (size, identifier, then BSON documents). */
function documentsIn(section: Buffer): number {
  let at = 4;
  while (at < section.length && section[at] !== 0) at++;
  at++;
  let n = 0;
  while (at + 4 <= section.length) {
    at += section.readInt32LE(at);
    n++;
  }
  return n;
}
