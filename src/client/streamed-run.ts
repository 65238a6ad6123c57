import { Code, type ConnectError } from "@connectrpc/connect";
import type {
  AgentOutput as WireAgentOutput,
  AgentStreamChunk as WireAgentStreamChunk,
} from "../../gen/ts/agentd/v1/agent_pb.js";
import { applyCustomPatch } from "../streams/custom-patch-stream.js";
import { agentOutputFromWire, streamChunkFromWire } from "../protocol/index.js";
import type { AgentOutput, AgentStreamChunk, JsonPatchOperation } from "../types/agent-io.js";
import { ChunkLog } from "./chunk-log.js";
import { clientError, toClientError } from "./client-errors.js";

/** One response of a server stream of chunks that ends with an output (RunStream, AttachInvocation). */
export interface ChunkStreamResponse {
  chunk?: WireAgentStreamChunk;
  output?: WireAgentOutput;
}

/**
 * One streamed turn (RunStream, `client.runStream()`), or the stream of
 * detached work a client attached to (AttachInvocation, `client.attach()`).
 * It works over HTTP/1.1, so in browsers too.
 *
 * - Iterate it for every chunk (model chunks, patches, artifacts, the
 *   TurnEnd); the iteration ends when the output arrives. Chunks are buffered;
 *   each iteration replays from the first.
 * - Await it (or `run.output`) for the {@link AgentOutput}; in-band failures
 *   resolve with `finishReason: "failed"` and `error`.
 * - `custom` is the live custom state (streamed patches applied as they arrive).
 * - RPC errors reject the output and make the iteration throw, as a `ConnectError`.
 */
export class StreamedRun<S = unknown> implements AsyncIterable<AgentStreamChunk>, PromiseLike<AgentOutput<S>> {
  /** Resolves with the invocation's output. */
  readonly output: Promise<AgentOutput<S>>;
  private readonly log = new ChunkLog();
  private liveCustom: S | undefined;
  /**
   * The streamed custom patches, by sequence: a takeover drops those after its
   * `supersededAfter` and replays the rest onto the initial state (the patches
   * are small; the chunk log holds them anyway, where a state per patch would not be).
   */
  private readonly customPatches: { sequence: number; patch: JsonPatchOperation[] }[] = [];
  private readonly initialCustom: S | undefined;
  private last = 0;
  private resolveOutput!: (output: AgentOutput<S>) => void;
  private rejectOutput!: (err: ConnectError) => void;

  /**
   * Reads `responses` (the generated client's RunStream or AttachInvocation
   * call; `rpc` names it in errors). Use `client.runStream()` or `client.attach()`.
   */
  constructor(
    responses: AsyncIterable<ChunkStreamResponse>,
    initialCustom?: S,
    private readonly rpc = "RunStream",
    afterSequence = 0,
  ) {
    this.last = afterSequence;
    this.liveCustom = initialCustom;
    this.initialCustom = initialCustom;
    this.output = new Promise<AgentOutput<S>>((resolve, reject) => {
      this.resolveOutput = resolve;
      this.rejectOutput = reject;
    });
    this.output.catch(() => {}); // observed by awaiting the run
    void this.read(responses);
  }

  /**
   * The `sequence` of the last chunk received (the `afterSequence` it started
   * from before any): re-attach to detached work after it to receive the rest
   * exactly once (`client.attach(agent, snapshotId, { afterSequence })`).
   */
  get lastSequence(): number {
    return this.last;
  }

  /** The live custom state (a copy); after a takeover, without the patches of the superseded part. */
  get custom(): S | undefined {
    return structuredClone(this.liveCustom);
  }

  /** Awaiting the run awaits its output. */
  then<R1 = AgentOutput<S>, R2 = never>(
    onfulfilled?: ((value: AgentOutput<S>) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.output.then(onfulfilled, onrejected);
  }

  /**
   * The concatenated text of the streamed model chunks, once the output
   * arrived. After a takeover of detached work (a chunk with `takeover`),
   * without the text of the superseded chunks: the final text, once.
   */
  async text(): Promise<string> {
    await this.output;
    return this.log.modelText();
  }

  /** Replays the buffered chunks, then the live ones, ending at the output. */
  [Symbol.asyncIterator](): AsyncIterator<AgentStreamChunk> {
    return this.log[Symbol.asyncIterator]();
  }

  /** After a takeover: the custom state as of `sequence` (the patches after it were superseded). */
  private rollBackCustom(sequence: number): void {
    const patches = this.customPatches;
    while (patches.length > 0 && patches[patches.length - 1]!.sequence > sequence) patches.pop();
    this.liveCustom = patches.reduce<S | undefined>(
      (custom, p) => applyCustomPatch<S>(custom, p.patch),
      this.initialCustom,
    );
  }

  private async read(responses: AsyncIterable<ChunkStreamResponse>): Promise<void> {
    let output: AgentOutput<S> | undefined;
    try {
      for await (const response of responses) {
        if (response.chunk) {
          const chunk = streamChunkFromWire(response.chunk);
          if (chunk.customPatch) {
            this.liveCustom = applyCustomPatch<S>(this.liveCustom, chunk.customPatch);
            this.customPatches.push({ sequence: chunk.sequence ?? 0, patch: chunk.customPatch });
          }
          if (chunk.takeover) this.rollBackCustom(chunk.takeover.supersededAfter);
          if (chunk.sequence) this.last = chunk.sequence;
          this.log.append(chunk);
        } else if (response.output) {
          output = agentOutputFromWire(response.output) as AgentOutput<S>;
        }
      }
      if (!output) throw clientError(Code.DataLoss, `the ${this.rpc} stream ended without an output`);
      this.log.finish();
      this.resolveOutput(output);
    } catch (err) {
      // The output is the stream's last word: a transport fault after it (a reset stream) changes nothing.
      if (output) {
        this.log.finish();
        this.resolveOutput(output);
        return;
      }
      const error = toClientError(err);
      this.log.fail(error);
      this.rejectOutput(error);
    }
  }
}
