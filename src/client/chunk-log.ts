import type { ConnectError } from "@connectrpc/connect";
import type { AgentStreamChunk } from "../types/agent-io.js";

/**
 * A buffered, replayable sequence of stream chunks: every iteration starts
 * from the first chunk and follows live ones until the log is finished (the
 * iteration ends) or failed (the iteration throws the error after the
 * buffered chunks). Appends after finish/fail are ignored.
 */
export class ChunkLog implements AsyncIterable<AgentStreamChunk> {
  private readonly chunks: AgentStreamChunk[] = [];
  private waiters: (() => void)[] = [];
  private ended = false;
  private failure: ConnectError | undefined;

  /** True once finished or failed. */
  get done(): boolean {
    return this.ended;
  }

  /** The chunks so far (a copy). */
  get received(): AgentStreamChunk[] {
    return [...this.chunks];
  }

  /**
   * The concatenated text of the model chunks so far. A takeover marker (see
   * `Takeover`) drops the text of the chunks before it whose sequence is
   * after its `supersededAfter`: that part of a turn was cut and runs again.
   */
  modelText(): string {
    const pieces: { sequence: number; text: string }[] = [];
    for (const chunk of this.chunks) {
      if (chunk.takeover) {
        const after = chunk.takeover.supersededAfter;
        while (pieces.length > 0 && pieces[pieces.length - 1]!.sequence > after) pieces.pop();
        continue;
      }
      const text = (chunk.modelChunk?.content ?? []).map((p) => p.text ?? "").join("");
      if (text) pieces.push({ sequence: chunk.sequence ?? 0, text });
    }
    return pieces.map((p) => p.text).join("");
  }

  /** Appends a chunk (ignored once done). */
  append(chunk: AgentStreamChunk): void {
    if (this.ended) return;
    this.chunks.push(chunk);
    this.wake();
  }

  /** Ends the log: iterations finish after the buffered chunks. */
  finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.wake();
  }

  /** Ends the log with an error: iterations throw it after the buffered chunks. */
  fail(err: ConnectError): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = err;
    this.wake();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<AgentStreamChunk> {
    let next = 0;
    for (;;) {
      if (next < this.chunks.length) {
        yield this.chunks[next++]!;
        continue;
      }
      if (this.ended) {
        if (this.failure) throw this.failure;
        return;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
