import { AgentError } from "../../errors/agent-error.js";
import type { AgentStreamChunk } from "../../types/agent-io.js";
import { AsyncChannel } from "../../streams/async-channel.js";
import { applyCustomPatch, CustomPatchStream } from "../../streams/custom-patch-stream.js";
import type { DetachedRun } from "../background/detached-run.js";
import { applyChunkTransform, type ChunkTransform, type TransformContext } from "../agents/state-transform.js";

/** What an invocation's output stream needs from the invocation. */
export interface InvocationStreamOptions {
  /** The agent's chunk transform (client-facing shaping), if any. */
  transform: ChunkTransform | undefined;
  /** The context the transform is called with. */
  transformContext: () => TransformContext;
  /** The detached run once the invocation detached (its chunks then go to the store's chunk log). */
  detachedRun: () => DetachedRun<unknown> | undefined;
  /** Called when a chunk cannot be shaped or delivered (a failing transform, a chunk the store refuses). */
  onFailure: (err: AgentError) => void;
  /** Chunks that may wait for the client before `emit` waits for the reader (backpressure). */
  maxBufferedChunks: number;
}

/**
 * How many times `maxBufferedChunks` chunks may wait, emitted by an agent that
 * does not await its emits, before the invocation fails RESOURCE_EXHAUSTED.
 */
export const UNAWAITED_CHUNKS_FACTOR = 16;

/**
 * The output stream of one invocation, in order: every chunk shaped by the
 * chunk transform and numbered (`sequence`, from 1, across detach), sent to
 * the client, or after detach recorded in the store's chunk log for clients
 * re-attaching (dropped when the store keeps no chunks, or once the client
 * stream ended). Also keeps the live client-facing custom state (streamed
 * patches applied) and the custom-state diff of the running turn.
 */
export class InvocationStream {
  private readonly channel: AsyncChannel<AgentStreamChunk>;
  private readonly patches = new CustomPatchStream();
  private chain: Promise<void> = Promise.resolve();
  private liveCustom: unknown;
  private last = 0;
  /** Chunks in {@link chain} not yet shaped and delivered. */
  private chained = 0;
  private overflowed = false;

  constructor(
    private readonly o: InvocationStreamOptions,
    initialCustom: unknown,
  ) {
    this.liveCustom = initialCustom;
    this.channel = new AsyncChannel({ capacity: o.maxBufferedChunks });
  }

  /** The chunks for the client (ends when the invocation settles). */
  get chunks(): AsyncIterable<AgentStreamChunk> {
    return this.channel;
  }

  /** The client-facing custom state with every streamed patch applied (not a copy). */
  get custom(): unknown {
    return this.liveCustom;
  }

  /** The `sequence` of the last chunk numbered. */
  get sequence(): number {
    return this.last;
  }

  /** Numbers the next chunks after `sequence` (a takeover continues a recorded stream). */
  continueAfter(sequence: number): void {
    this.last = sequence;
  }

  /** Whether chunks still go somewhere: to the client, or after detach to the store's chunk log. */
  get flowing(): boolean {
    const run = this.o.detachedRun();
    return run ? run.recordsChunks : !this.channel.isClosed;
  }

  /**
   * Queues `chunk` behind the ones before it; resolves once it was delivered
   * (or dropped) and the client's buffer has room again: while
   * `maxBufferedChunks` chunks wait for the client, the promise waits for the
   * reader to take half of them (backpressure; an agent that awaits its emits
   * never grows the buffer past the limit). A failure goes to `onFailure`;
   * the returned promise never rejects. With no chunk transform and no
   * detached run, the chunk is delivered before `emit` returns, and `emit`
   * returns undefined unless the buffer is full (the common case: a model
   * streaming to a connected client costs no promise per chunk). Only chunks of a transform
   * or of a detached run are queued, and an invocation neither loses its
   * transform nor un-detaches, so a chunk delivered at once never overtakes
   * a queued one. An agent that does not await its emits may get
   * {@link UNAWAITED_CHUNKS_FACTOR} x `maxBufferedChunks` ahead of the reader;
   * past that, chunks are dropped and the invocation fails RESOURCE_EXHAUSTED.
   */
  emit(chunk: AgentStreamChunk): Promise<void> | undefined {
    if (this.channel.size + this.chained >= this.o.maxBufferedChunks * UNAWAITED_CHUNKS_FACTOR) {
      this.overflow();
      return undefined;
    }
    if (!this.o.transform && !this.o.detachedRun()) {
      if (!this.channel.isClosed) {
        try {
          void this.deliver(chunk);
        } catch (err) {
          queueMicrotask(() => this.o.onFailure(AgentError.from(err)));
        }
      }
      return this.channel.whenWritable();
    }
    this.chained++;
    this.chain = this.chain
      .then(async () => {
        this.chained--;
        if (!this.flowing) return;
        const shaped = await applyChunkTransform(this.o.transform, chunk, this.o.transformContext());
        if (shaped) await this.deliver(shaped);
        await this.channel.whenWritable();
      })
      .catch((err) => {
        this.o.onFailure(AgentError.from(err));
      });
    return this.chain;
  }

  /**
   * An agent emitted {@link UNAWAITED_CHUNKS_FACTOR} times `maxBufferedChunks`
   * chunks without awaiting them (the reader could not keep up): the chunk is
   * dropped and, once, the invocation fails RESOURCE_EXHAUSTED (after the
   * agent's synchronous code, so not inside it), instead of memory growing.
   */
  private overflow(): void {
    if (this.overflowed) return;
    this.overflowed = true;
    const limit = this.o.maxBufferedChunks * UNAWAITED_CHUNKS_FACTOR;
    queueMicrotask(() =>
      this.o.onFailure(
        new AgentError(
          "RESOURCE_EXHAUSTED",
          `the agent streamed ${limit} chunks that the client had not read yet (${UNAWAITED_CHUNKS_FACTOR} x --max-buffered-chunks) without awaiting them: await responder.sendModelChunk and sendArtifact, which wait while the client's buffer is full`,
        ),
      ),
    );
  }

  /** Numbers `shaped` and sends it to the client, or after detach to the store's chunk log. */
  private deliver(shaped: AgentStreamChunk): Promise<void> | undefined {
    if (shaped.customPatch) this.liveCustom = applyCustomPatch(this.liveCustom, shaped.customPatch);
    const sequenced = { ...shaped, sequence: ++this.last };
    const run = this.o.detachedRun();
    if (run) return run.recordChunk(sequenced);
    this.channel.push(sequenced);
    return undefined;
  }

  /** Resolves once every chunk emitted so far was delivered (or dropped). */
  drained(): Promise<void> {
    return this.chain;
  }

  /** A turn starts: its first custom-state patch replaces the whole document. */
  startTurn(): void {
    this.patches.startTurn();
  }

  /** Streams the patch from the last streamed custom state to `custom`, if it changed. */
  async streamCustom(custom: unknown): Promise<void> {
    const patch = this.patches.next(custom);
    if (patch) await this.emit({ customPatch: patch });
  }

  /** Ends the client's stream after the queued chunks. */
  close(): void {
    this.channel.close();
  }

  /** Ends the client's stream with `err` after the queued chunks. */
  fail(err: AgentError): void {
    this.channel.fail(err);
  }
}
