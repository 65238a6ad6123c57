import { randomBytes } from "node:crypto";
import { MongoClient, type CommandStartedEvent, type CommandSucceededEvent, type Document } from "mongodb";
import type { ChunkStreamSource } from "../../stores/mongodb/chunk-stream.js";
import type { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import type { StoreLogger } from "../../stores/mongodb/store-logger.js";

/** A collection prefix no other test uses. */
export function freshPrefix(): string {
  return `t${randomBytes(5).toString("hex")}_`;
}

/** What a store's driver sent (and what the server answered), from command monitoring. */
export interface CommandLog {
  readonly started: CommandStartedEvent[];
  readonly succeeded: CommandSucceededEvent[];
  /** The started commands of these names, in order. */
  named(...names: string[]): CommandStartedEvent[];
  /** Forgets everything recorded so far. */
  clear(): void;
}

/** Records every command the store's client sends; the store must be created with `clientOptions: { monitorCommands: true }`. */
export function commandLog(store: MongoSessionStore<unknown>): CommandLog {
  const started: CommandStartedEvent[] = [];
  const succeeded: CommandSucceededEvent[] = [];
  const client = store.driverClient;
  if (!client.options.monitorCommands)
    throw new Error("create the store with clientOptions: { monitorCommands: true }");
  client.on("commandStarted", (event) => started.push(event));
  client.on("commandSucceeded", (event) => succeeded.push(event));
  return {
    started,
    succeeded,
    named: (...names) => started.filter((e) => names.includes(e.commandName)),
    clear: () => {
      started.length = 0;
      succeeded.length = 0;
    },
  };
}

/** Runs an admin command (e.g. a mongo-java-server test hook) through a short-lived client. */
export async function adminCommand(uri: string, command: Document): Promise<Document> {
  const client = new MongoClient(uri);
  try {
    return await client.db("admin").command(command);
  } finally {
    await client.close();
  }
}

/** A logger that keeps every line (message and fields). */
export function capturingLogger(): StoreLogger & { lines: { message: string; fields: Record<string, unknown> }[] } {
  const lines: { message: string; fields: Record<string, unknown> }[] = [];
  return {
    lines,
    warn: (fields, message) => lines.push({ message, fields }),
    info: (fields, message) => lines.push({ message, fields }),
  };
}

/**
 * Holds the `n` requests a store makes for its chunk collection after its first `baselines` ones:
 * with `baselines` watchers just started (each asks once for its baseline read), those are the
 * requests that open their change streams, so only in-process delivery can wake them until
 * `release` lets them go on.
 */
export function holdStreamOpening(
  store: MongoSessionStore<unknown>,
  baselines: number,
  n: number,
): { held: () => number; release: () => void } {
  const source = (store as unknown as { chunkLogs: { source: ChunkStreamSource } }).chunkLogs.source;
  const collection = source.collection;
  let calls = 0;
  let held = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  source.collection = async () => {
    const call = ++calls;
    if (call > baselines && call <= baselines + n) {
      held++;
      await released;
    }
    return collection();
  };
  return { held: () => held, release };
}
