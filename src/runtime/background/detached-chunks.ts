import type { AgentStreamChunk } from "../../types/agent-io.js";
import { isChunkLog, type ChunkLog, type ChunkLogKey } from "../../../stores/chunk-log.js";
import type { SessionStore, StoreCallContext } from "../../../stores/snapshot-store.js";

/** A chunk with its stream position set. */
export type SequencedChunk = AgentStreamChunk & { sequence: number };

/**
 * The recorded stream of one detached invocation: appends, in order, every
 * chunk streamed after detach to the store's chunk log (when the store keeps
 * one), and keeps the log while the work shows signs of life and for the
 * retention period after its last one. Without a chunk log it records
 * nothing (`recording` is false) and re-attaching is refused.
 */
export class DetachedChunks {
  private readonly log: ChunkLog | undefined;

  /** `key` resolves once the pending row exists (its ID names the log). */
  constructor(
    store: SessionStore<unknown>,
    private readonly key: Promise<ChunkLogKey>,
    private readonly retentionMs: number,
    private readonly ctx: StoreCallContext | undefined,
  ) {
    this.log = isChunkLog(store) ? store : undefined;
    this.key.catch(() => {}); // a pending row that was never written: nothing is recorded
  }

  /** True when the store keeps chunks (otherwise `record` is a no-op). */
  get recording(): boolean {
    return this.log !== undefined;
  }

  /** Appends `chunk`; resolves once the store holds it durably. Rejects with the store's error. */
  async record(chunk: SequencedChunk): Promise<void> {
    if (!this.log) return;
    const key = await this.key;
    await this.log.appendChunks(key, [{ sequence: chunk.sequence, chunk }], Date.now() + this.retentionMs, this.ctx);
  }

  /** Keeps the log for the retention period from now (a heartbeat, the end of the work). Never throws. */
  async keep(): Promise<void> {
    if (!this.log) return;
    try {
      await this.log.keepChunks(await this.key, Date.now() + this.retentionMs, this.ctx);
    } catch {
      // The next heartbeat (or the append that follows) sets it again.
    }
  }
}
