import { messageText, type Message } from "../types/content.js";
import type { Usage } from "../types/usage.js";
import type { Model, ModelCallOptions, ModelRequest, ModelResponse } from "./model.js";
import { generationCancelled } from "./generation-cancelled.js";

/** A reply this long (UTF-16 code units) ends its generation in a later event-loop turn (see generate). */
const LARGE_REPLY_CHARS = 64 * 1024;

/** Options of the offline echo model. */
export interface EchoModelOptions {
  /** Delay before each streamed chunk, in ms (default 0). A user message's metadata `echoDelayMs` overrides it. */
  delayMs?: number;
}

/**
 * The deterministic offline model: it answers `echo: <text of the last user
 * message>`, streamed word by word (at least two chunks), with no network and no
 * API key. Honours cancellation between chunks. Its usage is deterministic
 * too (see {@link echoUsage}): input tokens = words of the last user message,
 * output tokens = words of the reply.
 */
export class EchoModel implements Model {
  readonly name = "echo";
  private readonly delayMs: number;

  constructor(options: EchoModelOptions = {}) {
    this.delayMs = Math.max(0, options.delayMs ?? 0);
  }

  async generate(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse> {
    const lastUser = request.messages.findLast((m) => m.role === "user");
    const userText = messageText(lastUser);
    const reply = `echo: ${userText}`;
    const delayMs = messageDelay(lastUser) ?? this.delayMs;
    // The reply's words are counted as they stream (a piece is one word, or only whitespace),
    // not in a pass over the whole text after the last chunk: that pass over a 4 MiB reply
    // held the event loop for tens of ms at once.
    let outputTokens = 0;
    for (const piece of pieces(reply)) {
      if (delayMs > 0) await sleep(delayMs, options.signal);
      throwIfAborted(options.signal);
      if (!isWhitespace(piece.charCodeAt(0))) outputTokens++; // the reply starts "echo:": no piece is empty
      const delivered = options.onChunk?.({ role: "model", content: [{ text: piece }], index: 0 });
      if (delivered) await delivered; // backpressure; no await (no event-loop hop) while the reader keeps up
    }
    // What follows the answer (committing the turn: sizing and storing a history that now holds
    // the reply twice over, shaping the output) starts in an event-loop turn of its own after a
    // long reply, as after a real provider's last network read: other calls' I/O waiting since
    // the last chunk is served first, instead of behind all that work at once.
    if (reply.length >= LARGE_REPLY_CHARS) await laterTurn();
    throwIfAborted(options.signal);
    const message: Message = { role: "model", content: [{ text: reply }] };
    // The reply is "echo:", a space, then the user's text: one word more than the user's.
    const inputTokens = outputTokens - 1;
    return {
      message,
      finishReason: "stop",
      usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
    };
  }
}

/**
 * What the echo model reports as usage: input tokens = the number of
 * whitespace-separated words of the last user message's text, output tokens =
 * the words of the reply (`echo: hello traced` is 3), total = their sum.
 */
export function echoUsage(userText: string, reply: string): Usage {
  const inputTokens = countWords(userText);
  const outputTokens = countWords(reply);
  return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
}

/** The number of runs of non-whitespace (`\S+`) in `text`, counted in one pass without allocating. */
function countWords(text: string): number {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const space = isWhitespace(text.charCodeAt(i));
    if (!space && !inWord) words++;
    inWord = !space;
  }
  return words;
}

/** Whether `code` is a JavaScript whitespace or line terminator (what `\s` matches). */
function isWhitespace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

function messageDelay(message: Message | undefined): number | undefined {
  const value = message?.metadata?.["echoDelayMs"];
  return typeof value === "number" && value >= 0 ? value : undefined;
}

/** Splits text into word-sized pieces that concatenate back to the text. */
export function splitIntoChunks(text: string): string[] {
  return [...pieces(text)];
}

/** The pieces of {@link splitIntoChunks} one at a time (a large text streams without an array of all its words). */
function* pieces(text: string): Generator<string> {
  if (text === "") {
    yield "";
    return;
  }
  const word = /\S+\s*|\s+/y;
  let match: RegExpExecArray | null;
  while ((match = word.exec(text)) !== null) yield match[0];
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw generationCancelled(signal);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** Resolves in a later event-loop turn, after pending I/O callbacks. */
function laterTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
