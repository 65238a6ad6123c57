import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import type { AgentStreamChunk, AgentOutput, AgentInput, AgentInputSchema } from "../../gen/ts/agentd/v1/agent_pb.js";
import { Role } from "../../gen/ts/agentd/v1/content_pb.js";
import type { AgentService, ChatRequestSchema, ChatResponse } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { AsyncChannel } from "../../src/streams/async-channel.js";

type ChatRequestInit = MessageInitShape<typeof ChatRequestSchema>;

/** A user text input as a wire AgentInput init. */
export function textInput(text: string, metadata?: Record<string, unknown>): MessageInitShape<typeof AgentInputSchema> {
  return {
    message: {
      role: Role.USER,
      content: [{ kind: { case: "text", value: text } }],
      ...(metadata ? { metadata: metadata as never } : {}),
    },
  };
}

/** The text of the model chunks of a turn. */
export function chunksText(chunks: AgentStreamChunk[]): string {
  return chunks
    .flatMap((c) => c.modelChunk?.content ?? [])
    .map((p) => (p.kind.case === "text" ? p.kind.value : ""))
    .join("");
}

/** One finished turn as the client saw it. */
export interface WireTurn {
  chunks: AgentStreamChunk[];
  turnEnd: NonNullable<AgentStreamChunk["turnEnd"]>;
}

/**
 * A test-side bidi Chat: requests are pushed as the test goes, responses are
 * read turn by turn (until each TurnEnd) and finally the output.
 */
export class WireChat {
  private readonly requests = new AsyncChannel<ChatRequestInit>();
  private readonly responses: AsyncIterator<ChatResponse>;

  constructor(client: Client<typeof AgentService>, first: ChatRequestInit, options: { signal?: AbortSignal } = {}) {
    this.requests.push(first);
    this.responses = client.chat(this.requests, options)[Symbol.asyncIterator]();
  }

  /** Sends another request (input, or anything for bad-input tests). */
  send(request: ChatRequestInit): void {
    this.requests.push(request);
  }

  /** Sends a user text. */
  sendText(text: string, metadata?: Record<string, unknown>): void {
    this.send({ input: textInput(text, metadata) as AgentInput });
  }

  /** Reads the next chunk (e.g. the first one a turn streams: the turn is running). */
  async nextChunk(): Promise<AgentStreamChunk> {
    const next = await this.responses.next();
    if (next.done) throw new Error("stream ended before the next chunk");
    if (!next.value.chunk) throw new Error(`expected a chunk, got ${next.value.output ? "the output" : "nothing"}`);
    return next.value.chunk;
  }

  /** Reads chunks until the next TurnEnd. */
  async nextTurn(): Promise<WireTurn> {
    const chunks: AgentStreamChunk[] = [];
    for (;;) {
      const next = await this.responses.next();
      if (next.done) throw new Error("stream ended before TurnEnd");
      const chunk = next.value.chunk;
      if (!chunk) throw new Error(`expected a chunk, got ${next.value.output ? "the output" : "an empty response"}`);
      chunks.push(chunk);
      if (chunk.turnEnd) return { chunks, turnEnd: chunk.turnEnd };
    }
  }

  /** Half-closes and reads the remaining responses; returns the output and any chunks before it. */
  async finish(): Promise<{ output: AgentOutput; chunks: AgentStreamChunk[] }> {
    this.requests.close();
    return this.drain();
  }

  /** Reads the remaining responses without half-closing. */
  async drain(): Promise<{ output: AgentOutput; chunks: AgentStreamChunk[] }> {
    const chunks: AgentStreamChunk[] = [];
    for (;;) {
      const next = await this.responses.next();
      if (next.done) throw new Error("stream ended without output");
      if (next.value.output) {
        const end = await this.responses.next();
        if (!end.done) throw new Error("a response followed the output");
        return { output: next.value.output, chunks };
      }
      if (next.value.chunk) chunks.push(next.value.chunk);
    }
  }
}

/** Everything an AttachInvocation stream returned: its chunks, then the work's output. */
export interface AttachedStream {
  chunks: AgentStreamChunk[];
  output: AgentOutput | undefined;
}

/** Reads an AttachInvocation stream of `snapshotId` on `client` (after `afterSequence`) to its end. */
export async function attachToEnd(
  client: Client<typeof AgentService>,
  request: { agent: string; snapshotId: string; afterSequence?: number },
): Promise<AttachedStream> {
  const chunks: AgentStreamChunk[] = [];
  let output: AgentOutput | undefined;
  for await (const res of client.attachInvocation(request)) {
    if (res.chunk) chunks.push(res.chunk);
    if (res.output) output = res.output;
  }
  return { chunks, output };
}
