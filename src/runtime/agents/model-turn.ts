import type { Message } from "../../types/content.js";
import type { TurnResult } from "../../types/agent-io.js";
import type { TurnFnContext } from "./agent-function.js";

/**
 * Runs one model call over the session history (after `prelude`, e.g.
 * prompt-rendered messages that are not stored), streams its chunks, appends
 * the model's message to the history, and returns its finish reason.
 */
export async function generateModelTurn<S>(
  ctx: TurnFnContext<S>,
  modelName: string,
  prelude: Message[] = [],
): Promise<TurnResult> {
  const model = ctx.model(modelName);
  const response = await model.generate(
    { messages: prelude.length > 0 ? ctx.session.messagesAfter(prelude) : ctx.session.messages() },
    { signal: ctx.turn.signal, onChunk: (chunk) => ctx.responder.sendModelChunk(chunk) },
  );
  ctx.session.addMessages(response.message);
  return { finishReason: response.finishReason };
}
