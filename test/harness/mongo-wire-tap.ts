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
 * What a {@link MongoWireTap.failpoint} does with one command:
 *
 * - `pass` (or undefined): forwarded as usual;
 * - `cut-before`: never sent; the client's connection is cut (the driver sees a
 *   network error of a command that was not applied);
 * - `cut-after`: sent and applied; its reply is dropped and the connection
 *   cut (a lost reply: the outcome is unknown to the client);
 * - `hold`: never sent, the connection left hanging (the test kills the client
 *   process while it waits: a crash before the command was sent);
 * - `hold-after`: sent and applied, its reply held back for good (a crash
 *   after the command was applied, before its reply was read);
 * - `fail-transient`: never sent; the tap answers it with a transient error
 *   (`PrimarySteppedDown`, labelled `RetryableWriteError`), the connection
 *   kept (a failover's refusal: the command was not applied).
 *
 * {@link MongoWireTap.onFailpoint} is called once the action took effect
 * (for `cut-after` and `hold-after`: once the server's reply arrived).
 */
export type FailAction = "pass" | "cut-before" | "cut-after" | "hold" | "hold-after" | "fail-transient";

/** A command the tap is about to forward: its name, its collection (or ""), the command document. */
export interface TappedCommand {
  name: string;
  collection: string;
  command: Document;
  /**
   * Its write statements (`documents`, `updates` or `deletes`), whether in
   * the command document or in a document-sequence section: what the server
   * applies, and close to what the oplog logs for each.
   */
  statements: Document[];
  /** Bytes of the whole wire message. */
  bytes: number;
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
  /** Called with every command the client sends (tests that inspect what was written, and how big it is). */
  listener: ((command: Document, tapped: TappedCommand) => void) | undefined;
  /** Decides, per command, whether it passes or fails (see {@link FailAction}); undefined: every command passes. */
  failpoint: ((command: TappedCommand) => FailAction | undefined) | undefined;
  /** Closes of the connections a `hold` or `hold-after` left hanging. */
  private readonly heldConnections = new Set<() => void>();
  /** Called when a failpoint's action took effect. */
  onFailpoint: ((command: TappedCommand, action: FailAction) => void) | undefined;

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

  /** Cuts every connection a `hold` or `hold-after` left hanging (its client sees a network error). */
  cutHeld(): void {
    for (const close of this.heldConnections) close();
    this.heldConnections.clear();
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
    /** Replies (by the request's ID) to drop, and what to do then. */
    const lost = new Map<number, { command: TappedCommand; action: FailAction }>();
    let held = false;
    let closed = false;
    const close = (): void => {
      if (closed) return;
      closed = true;
      this.heldConnections.delete(close);
      this.counts.openConnections--;
      this.sockets.delete(client);
      this.sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    const fromClient = new MessageSplitter((message) => {
      if (held || closed) return;
      const tapped = message.readInt32LE(12) === OP_MSG ? this.countMessage(message) : undefined;
      const action = (tapped && this.failpoint?.(tapped)) ?? "pass";
      if (action === "pass") {
        upstream.write(message);
      } else if (action === "fail-transient") {
        client.write(transientErrorReply(message.readInt32LE(4)));
        this.onFailpoint?.(tapped!, action);
      } else if (action === "cut-before" || action === "hold") {
        if (action === "hold") {
          held = true;
          this.heldConnections.add(close);
        } else close();
        this.onFailpoint?.(tapped!, action);
      } else {
        lost.set(message.readInt32LE(4), { command: tapped!, action });
        upstream.write(message);
      }
    });
    const fromServer = new MessageSplitter((message) => {
      if (closed) return;
      const failed = lost.get(message.readInt32LE(8));
      if (!failed) {
        if (!held) client.write(message);
        return;
      }
      lost.delete(message.readInt32LE(8));
      if (failed.action === "cut-after") close();
      else {
        held = true;
        this.heldConnections.add(close);
      }
      this.onFailpoint?.(failed.command, failed.action);
    });
    client.on("data", (data: Buffer) => fromClient.push(data));
    upstream.on("data", (data: Buffer) => fromServer.push(data));
    client.on("close", close).on("error", close);
    upstream.on("close", close).on("error", close);
  }

  /** Counts one OP_MSG; returns its command (undefined for a message without a body section). */
  private countMessage(message: Buffer): TappedCommand | undefined {
    const end = message.length - ((message.readUInt32LE(16) & CHECKSUM_PRESENT) !== 0 ? 4 : 0);
    let at = 20;
    let command: Document | undefined;
    const sequenced: Buffer[] = [];
    while (at < end) {
      const kind = message[at]!;
      const size = message.readInt32LE(at + 1);
      if (kind === 0) command = BSON.deserialize(message.subarray(at + 1, at + 1 + size));
      else sequenced.push(...documentsIn(message.subarray(at + 1, at + 1 + size)));
      at += 1 + size;
    }
    if (!command) return undefined;
    return this.countCommand(command, sequenced, message.length);
  }

  private countCommand(command: Document, sequenced: Buffer[], bytes: number): TappedCommand {
    const name = Object.keys(command)[0] ?? "?";
    const target = command[name] as unknown;
    const collection = typeof target === "string" ? target : name === "getMore" ? String(command.collection ?? "") : "";
    const key = `${name} ${collection}`.trim();
    this.counts.commands.set(key, (this.counts.commands.get(key) ?? 0) + 1);
    const pipeline = command.pipeline as Document[] | undefined;
    if (name === "aggregate" && pipeline?.[0]?.$changeStream !== undefined) this.counts.changeStreams++;
    const statements = (field: string): number =>
      Array.isArray(command[field]) ? (command[field] as unknown[]).length : 0;
    if (name === "insert") this.counts.writeStatements += statements("documents") + sequenced.length;
    else if (name === "update") this.counts.writeStatements += statements("updates") + sequenced.length;
    else if (name === "delete") this.counts.writeStatements += statements("deletes") + sequenced.length;
    else if (name === "findAndModify") this.counts.writeStatements++;
    const field = { insert: "documents", update: "updates", delete: "deletes" }[name];
    const inline = field && Array.isArray(command[field]) ? (command[field] as Document[]) : [];
    const tapped: TappedCommand = {
      name,
      collection,
      command,
      bytes,
      get statements(): Document[] {
        return [...inline, ...sequenced.map((document) => BSON.deserialize(document))];
      },
    };
    this.listener?.(command, tapped);
    return tapped;
  }
}

/** Cuts a byte stream of MongoDB wire messages into whole messages (each handed to `onMessage`). */
class MessageSplitter {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onMessage: (message: Buffer) => void) {}

  push(data: Buffer): void {
    this.pending = this.pending.length === 0 ? data : Buffer.concat([this.pending, data]);
    while (this.pending.length >= 16) {
      const length = this.pending.readInt32LE(0);
      if (this.pending.length < length) break;
      const message = this.pending.subarray(0, length);
      this.pending = this.pending.subarray(length);
      this.onMessage(message);
    }
  }
}

/** An OP_MSG reply to request `requestId`: a transient `PrimarySteppedDown` error (nothing was applied). */
function transientErrorReply(requestId: number): Buffer {
  const body = BSON.serialize({
    ok: 0,
    errmsg: "the wire tap's failpoint: primary stepped down",
    code: 189,
    codeName: "PrimarySteppedDown",
    errorLabels: ["RetryableWriteError"],
  });
  const header = Buffer.alloc(21);
  header.writeInt32LE(21 + body.length, 0);
  header.writeInt32LE(0, 4);
  header.writeInt32LE(requestId, 8);
  header.writeInt32LE(OP_MSG, 12);
  header.writeUInt32LE(0, 16);
  header[20] = 0; // a body section
  return Buffer.concat([header, body]);
}

/** The documents of an OP_MSG document-sequence section (size, identifier, then BSON documents). */
function documentsIn(section: Buffer): Buffer[] {
  let at = 4;
  while (at < section.length && section[at] !== 0) at++;
  at++;
  const documents: Buffer[] = [];
  while (at + 4 <= section.length) {
    const size = section.readInt32LE(at);
    documents.push(section.subarray(at, at + size));
    at += size;
  }
  return documents;
}
